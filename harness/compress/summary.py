"""Compression, the wording: what the summary model is asked, and what replaces the middle.

`summary_prompt` is the one user message sent to the summary model (an iterative update
when a previous summary exists); `summary_message` is the reference-only message that
stands in for the summarized middle, carrying the identifier index (`identifiers.py`) and a
pointer to `session_search` when those are on; `fallback_summary` is the deterministic
checkpoint used when the summary call fails.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from harness.compress.plan import latest_user_index
from harness.types import Message
from prompts import load_text

__all__ = ["fallback_summary", "serialize_turns", "summary_message", "summary_prompt"]


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


def summary_message(body: str, *, identifiers: Sequence[str] = (), search_pointer: bool = False) -> Message:
    """The reference-only message that stands in for the summarized middle.

    Args:
        body: the summary text.
        identifiers: the identifier index (`identifiers.extract_identifiers`), shown verbatim.
        search_pointer: say that the compressed turns can be found with `session_search`.
    """
    parts = [load_text("summary_prefix"), body.strip()]
    if identifiers:
        parts.append(load_text("summary_identifiers").format(identifiers="; ".join(identifiers)))
    if search_pointer:
        parts.append(load_text("summary_search_pointer"))
    parts.append(load_text("summary_suffix"))
    return Message(role="user", content="\n\n".join(parts), summary=True)


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
