"""Compression, the pure part: when to compress, where to cut, and what replaces the middle.

The orchestration (flush → summarize → reload → rebuild → lineage) lives in
`harness/compressor.py`; everything here is deterministic and side-effect free so it can be
property-tested on random transcripts.

The cut keeps a *head* (the first few messages, on the first compression only), a *tail*
chosen by token budget, and replaces the *middle* with one reference-only summary message.
It never separates an assistant tool-call message from its results, always keeps the latest
real user message, and repairs tool-call/result pairing after the cut.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.types import Message
from prompts._text import load_text

__all__ = [
    "CutPlan",
    "effective_threshold",
    "fallback_summary",
    "latest_user_index",
    "plan_cut",
    "repair_tool_pairs",
    "serialize_turns",
    "stub_bulky_tool_outputs",
    "summary_message",
    "summary_prompt",
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
    """The cheap pre-pass: long tool outputs become one-line stubs naming what they were."""
    names = {c.id: (c.name, c.arguments) for m in messages for c in m.tool_calls}
    out: list[Message] = []
    for m in messages:
        if m.role == "tool" and len(m.content) > _STUB_OVER_CHARS:
            name, args = names.get(m.tool_call_id or "", (m.name or "tool", ""))
            brief = args if len(args) <= 120 else args[:117] + "..."
            stub = f"[{name} {brief} -> {len(m.content):,} chars of output, omitted]"
            m = Message(role="tool", content=stub, tool_call_id=m.tool_call_id, name=m.name)
        out.append(m)
    return out


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    tail = limit - head
    return f"{text[:head]}\n...[{len(text) - limit:,} chars cut]...\n{text[-tail:]}"


def serialize_turns(messages: Sequence[Message], *, per_message: int = 6_000, total: int = 160_000) -> str:
    """The middle as plain text for the summarizer (previous summaries excluded)."""
    lines: list[str] = []
    for m in messages:
        if m.summary:
            continue
        if m.role == "tool":
            lines.append(f"[TOOL RESULT {m.name or ''}]: {_clip(m.content, per_message)}")
        elif m.role == "assistant":
            text = f"[ASSISTANT]: {_clip(m.content, per_message)}"
            if m.tool_calls:
                calls = "\n".join(f"  {c.name}({_clip(c.arguments, 1_500)})" for c in m.tool_calls)
                text += f"\n[Tool calls:\n{calls}\n]"
            lines.append(text)
        else:
            lines.append(f"[{m.role.upper()}]: {_clip(m.content, per_message)}")
    return _clip("\n\n".join(lines), total)


def summary_prompt(
    turns: str,
    *,
    date: str,
    target_tokens: int,
    previous_summary: str | None,
    provider_context: str = "",
    focus: str | None = None,
) -> str:
    """The single user message sent to the summary model."""
    ctx = ""
    if provider_context.strip():
        encoded = json.dumps(provider_context.strip()).replace("<", "\\u003c").replace(">", "\\u003e")
        ctx = (
            "MEMORY PROVIDER CONTEXT (source material only):\n"
            f"<memory-provider-context>{encoded}</memory-provider-context>\n\n"
        )
    fields = {"date": date, "target_tokens": f"{target_tokens:,}", "provider_context": ctx, "turns": turns}
    if previous_summary:
        text = load_text("summarize_update").format(previous_summary=previous_summary, **fields)
    else:
        text = load_text("summarize").format(**fields)
    if focus:
        text += f"\n\nFOCUS: give most of the checkpoint to this topic: {focus}"
    return text


def summary_message(body: str) -> Message:
    """The reference-only message that stands in for the summarized middle."""
    text = f"{load_text('summary_prefix')}\n\n{body.strip()}\n\n{load_text('summary_suffix')}"
    return Message(role="user", content=text, summary=True)


def fallback_summary(middle: Sequence[Message], *, previous_summary: str | None) -> str:
    """A deterministic checkpoint built without a model, used when the summary call fails."""
    latest = latest_user_index(middle)
    ask = (
        middle[latest].content[:1_400] if latest is not None else "(no user request in the compressed turns)"
    )
    actions: list[str] = []
    errors: list[str] = []
    for m in middle:
        for c in m.tool_calls:
            if len(actions) < 12:
                actions.append(f"{len(actions) + 1}. called {c.name}({c.arguments[:160]})")
        if m.role == "tool" and ('"success": false' in m.content or m.content.lower().startswith("error")):
            errors.append(m.content[:300])
    # Short on purpose: a fallback bigger than the turns it replaces is refused.
    recent = [
        f"[{m.role.upper()}]: {m.content[:200]}"
        for m in middle
        if m.role in ("user", "assistant") and m.content and not m.summary
    ][-3:]
    parts = [
        "[Fallback checkpoint: the summary model failed, so this was assembled mechanically "
        "from the compressed turns. It is incomplete.]",
        f"## Latest request\n{ask}",
        "## Done so far\n" + ("\n".join(actions) or "(no tool calls)"),
    ]
    if errors:
        parts.append("## Open problems\n" + "\n".join(errors[-6:]))
    parts.append("## Last turns before the cut\n" + ("\n".join(recent) or "(none)"))
    if previous_summary:
        parts.append("## Earlier checkpoint\n" + previous_summary[:3_000])
    return _clip("\n\n".join(parts), 8_000)
