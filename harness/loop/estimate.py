"""Prompt-size estimates in the model's tokens.

The provider's reported prompt size is the truth; between reports the estimate is the last
report plus what was appended since, counted with our tokenizer and scaled by the ratio
learned from reports (cl100k and a model's own tokenizer can differ by 2-3×, and the
compression budgets must be in the model's tokens). With no valid report, the whole
prompt is counted from scratch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from harness.tokens import MESSAGE_OVERHEAD, TokenCounter
from harness.types import Message, ModelRequest, ToolSpec, Usage

__all__ = ["PromptEstimator"]


@dataclass(frozen=True, slots=True)
class _Anchor:
    """The last provider-reported prompt size and what it covered."""

    prompt_tokens: int
    n_messages: int
    version: int
    system: str


class PromptEstimator:
    """Estimates the next request's size; learns the token ratio from reported usage."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.token_scale = 1.0
        """Provider tokens per tokenizer token, learned from reported usage."""
        self._anchor: _Anchor | None = None
        self._sums_version = -1
        self._sums: list[int] = [0]
        """Prefix sums of message counts (unscaled) for the transcript at `_sums_version`."""
        self._counted: list[Message] = []
        """The messages `_sums` covers, to check a later sequence extends them."""

    def scaled(self, tokens: int) -> int:
        """Our tokenizer's count converted to the model's tokens."""
        return math.ceil(tokens * self.token_scale)

    def count_message(self, message: Message) -> int:
        """One message's size in the model's tokens."""
        return self.scaled(self.counter.count_message(message))

    def full(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        version: int | None = None,
    ) -> int:
        """The prompt counted from scratch (scaled), ignoring the last report.

        With the transcript's `version`, the history is counted incrementally: between
        rewrites the transcript only grows, so each message is counted once per version
        and a turn costs what it appended, not the whole history.
        """
        if version is None:
            return self.scaled(self.counter.count_prompt(system, messages, tools))
        return self.scaled(self._unscaled(system, messages, tools, version))

    def _unscaled(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], version: int
    ) -> int:
        return (
            self.counter.count_text(system)
            + MESSAGE_OVERHEAD
            + self._history(messages, version)
            + self.counter.count_tools(tools)
        )

    def _history(self, messages: Sequence[Message], version: int) -> int:
        """Unscaled tokens of `messages`, from prefix sums kept for one transcript version."""
        refs = self._counted
        k = min(len(messages), len(refs))
        last = messages[k - 1] if k > 0 else None
        if version != self._sums_version or (
            last is not None and last is not refs[k - 1] and last != refs[k - 1]
        ):
            # A rewrite, or a sequence that is not this version's transcript: count afresh. (An
            # equal message is the same one given its store id since: ids do not compare.)
            self._sums_version = version
            self._sums = [0]
            refs = self._counted = []
        sums = self._sums
        for m in messages[len(refs) :]:
            sums.append(sums[-1] + self.counter.count_message(m))
            refs.append(m)
        return sums[len(messages)]

    def estimate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, version: int
    ) -> int:
        """The last reported size plus what was appended since, when that report still holds."""
        a = self._anchor
        if a is not None and a.version == version and a.system == system and len(messages) >= a.n_messages:
            return a.prompt_tokens + self.scaled(self.counter.count_messages(messages[a.n_messages :]))
        return self.full(system, messages, tools, version=version)

    def invalidate(self) -> None:
        """The transcript was rewritten: the last report no longer describes it."""
        self._anchor = None

    def observe(self, request: ModelRequest, usage: Usage, *, version: int) -> None:
        """Learn from a turn request's reported usage (the anchor and the token ratio)."""
        self._anchor = _Anchor(usage.prompt, len(request.messages), version, request.system)
        ours = self._unscaled(request.system, request.messages, request.tools, version)
        if ours > 0 and usage.prompt > 0:
            self.token_scale = min(4.0, max(0.25, usage.prompt / ours))

    def usage_for(self, request: ModelRequest, reply: Message) -> Usage:
        """An estimated usage for a reply that reported none."""
        return Usage(
            input=self.full(request.system, request.messages, request.tools), output=self.count_message(reply)
        )
