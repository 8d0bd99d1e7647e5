"""Compression, the plan: when to compress and where to cut.

The orchestration (flush → summarize → reload → rebuild → lineage) lives in `run.py` and
the summary's wording in `summary.py`; everything here is deterministic and side-effect
free so it can be property-tested on random transcripts.

The cut keeps a *head* (the first few messages, on the first compression only), a *tail*
chosen by token budget, and replaces the *middle* with one reference-only summary message.
It never separates an assistant tool-call message from its results, always keeps the latest
real user message, and repairs tool-call/result pairing after the cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.types import Message

__all__ = [
    "CutPlan",
    "effective_threshold",
    "latest_user_index",
    "plan_cut",
    "repair_tool_pairs",
    "stub_bulky_tool_outputs",
    "summary_target_tokens",
]

_SMALL_WINDOW = 512_000
_STUB_OVER_CHARS = 200


def effective_threshold(fraction: float, context_window: int) -> int:
    """Prompt tokens at which compression triggers.

    Windows under 512K tokens use at least 0.75: a small local model would otherwise
    compress on nearly every turn.
    """
    if context_window < _SMALL_WINDOW:
        fraction = max(fraction, 0.75)
    return int(fraction * context_window)


def summary_target_tokens(middle_tokens: int, context_window: int) -> int:
    """The summary length stated in the prompt (never enforced with max_tokens)."""
    ceiling = max(256, min(int(context_window * 0.05), 10_000))
    return max(min(int(middle_tokens * 0.2), ceiling), min(2_000, ceiling))


def latest_user_index(messages: Sequence[Message]) -> int | None:
    """Index of the newest real user message (not a summary)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user" and not messages[i].summary:
            return i
    return None


def _group_start(messages: Sequence[Message], i: int) -> int:
    """Move an index back so it does not point into the results of an earlier tool call."""
    while 0 < i < len(messages) and messages[i].role == "tool":
        i -= 1
    return i


def _group_end(messages: Sequence[Message], i: int) -> int:
    """Move an end index forward past the tool results that answer messages before it."""
    while i < len(messages) and messages[i].role == "tool":
        i += 1
    return i


@dataclass(frozen=True, slots=True)
class CutPlan:
    """`messages[:head_end]` stays, `[head_end:tail_start]` is summarized, `[tail_start:]` stays."""

    head_end: int
    tail_start: int

    @property
    def empty(self) -> bool:
        return self.tail_start <= self.head_end


def plan_cut(
    messages: Sequence[Message],
    *,
    count: Callable[[Message], int],
    tail_budget: int,
    protect_first_n: int,
    protect_last_n: int,
) -> CutPlan:
    """Choose the head, middle and tail of a transcript.

    Args:
        count: tokens of one message.
        tail_budget: tokens the tail may hold (it always holds `protect_last_n` messages).
        protect_first_n: head size (pass 0 after the first compression).
        protect_last_n: minimum tail size in messages.
    """
    n = len(messages)
    head_end = _group_end(messages, min(protect_first_n, n))
    # A head that ends on an assistant message with tool calls must include its results.
    if 0 < head_end < n and messages[head_end - 1].tool_calls:
        head_end = _group_end(messages, head_end)

    floor = max(head_end, n - protect_last_n)
    tail_start = floor
    used = sum(count(m) for m in messages[tail_start:])
    while tail_start > head_end:
        cost = count(messages[tail_start - 1])
        if used + cost > tail_budget:
            break
        used += cost
        tail_start -= 1
    plan = _anchored(messages, head_end, tail_start)
    if plan.empty and floor > head_end:
        # Everything fit in the token budget: keep only the minimum tail, so a compression
        # that was asked for still summarizes something.
        plan = _anchored(messages, head_end, floor)
    return plan


def _anchored(messages: Sequence[Message], head_end: int, tail_start: int) -> CutPlan:
    """Align a tail start to tool groups and pull it back to the latest real user message."""
    tail_start = _group_start(messages, tail_start)
    last_user = latest_user_index(messages)
    if last_user is not None and last_user >= head_end and tail_start > last_user:
        tail_start = last_user
    return CutPlan(head_end, max(tail_start, head_end))


def repair_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """Drop results whose call is gone and strip calls whose results are gone."""
    call_ids = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls}
    result_ids = {m.tool_call_id for m in messages if m.role == "tool"}
    out: list[Message] = []
    for m in messages:
        if m.role == "tool" and m.tool_call_id not in call_ids:
            continue
        if m.role == "assistant" and m.tool_calls:
            kept = tuple(c for c in m.tool_calls if c.id in result_ids)
            if len(kept) != len(m.tool_calls):
                content = m.content if (m.content or kept) else "(tool call removed)"
                m = Message(role="assistant", content=content, tool_calls=kept)
        out.append(m)
    return out


def stub_bulky_tool_outputs(messages: Sequence[Message]) -> list[Message]:
    """The cheap pre-pass (no model call): long tool outputs become one-line stubs.

    A stub names the call that produced the output, its size, and — when the output is in
    the session store — its message id, so a summary that keeps the stub keeps the way
    back to the full text (`session_search` with `message_id`).
    """
    names = {c.id: (c.name, c.arguments) for m in messages for c in m.tool_calls}
    out: list[Message] = []
    for m in messages:
        if m.role == "tool" and len(m.content) > _STUB_OVER_CHARS:
            name, args = names.get(m.tool_call_id or "", (m.name or "tool", ""))
            brief = args if len(args) <= 120 else args[:117] + "..."
            where = "" if m.store_id is None else f"; stored as message {m.store_id}"
            stub = f"[{name} {brief} -> {len(m.content):,} chars of output, omitted{where}]"
            m = Message(
                role="tool", content=stub, tool_call_id=m.tool_call_id, name=m.name, store_id=m.store_id
            )
        out.append(m)
    return out
