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

from harness.tokens import TokenCounter
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

    def scaled(self, tokens: int) -> int:
        """Our tokenizer's count converted to the model's tokens."""
        return math.ceil(tokens * self.token_scale)

    def count_message(self, message: Message) -> int:
        """One message's size in the model's tokens."""
        return self.scaled(self.counter.count_message(message))

    def full(self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        """The prompt counted from scratch (scaled), ignoring the last report."""
        return self.scaled(self.counter.count_prompt(system, messages, tools))

    def estimate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, version: int
    ) -> int:
        """The last reported size plus what was appended since, when that report still holds."""
        a = self._anchor
        if a is not None and a.version == version and a.system == system and len(messages) >= a.n_messages:
            return a.prompt_tokens + self.scaled(self.counter.count_messages(messages[a.n_messages :]))
        return self.full(system, messages, tools)

    def invalidate(self) -> None:
        """The transcript was rewritten: the last report no longer describes it."""
        self._anchor = None

    def observe(self, request: ModelRequest, usage: Usage, *, version: int) -> None:
        """Learn from a turn request's reported usage (the anchor and the token ratio)."""
        self._anchor = _Anchor(usage.prompt, len(request.messages), version, request.system)
        ours = self.counter.count_prompt(request.system, request.messages, request.tools)
        if ours > 0 and usage.prompt > 0:
            self.token_scale = min(4.0, max(0.25, usage.prompt / ours))

    def usage_for(self, request: ModelRequest, reply: Message) -> Usage:
        """An estimated usage for a reply that reported none."""
        return Usage(
            input=self.full(request.system, request.messages, request.tools), output=self.count_message(reply)
        )
