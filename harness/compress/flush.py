"""The compression flush: one last model call to save durable facts before summarizing.

A synthetic user note (`prompts/text/flush.md`) is appended to a *copy* of the transcript
and sent once. Only `memory` tool calls in the reply are executed, directly against the
store; there is no second model turn. The live transcript never sees the note or the reply.

Modes:
- `memory_only`: the request carries only the memory tool (the classic design). Cheaper to
  decode, but a different tool list means a different prefix: most caches re-prefill it all.
- `cache_safe`: the request carries the session's unchanged tool list, so the prefix
  matches the previous turn's; calls to other tools are answered "not available during
  flush" and not run.
- `forced`: the unchanged tool list with `tool_choice` naming the memory tool, so the prefix
  stays cached and the model can only call memory.
- `off`: no flush.

How the request asks for the facts is the *shape* (`flush_shapes.py`, measured by
`benchmarks/local_flush.py`): by default (`compression.flush_reply: text_list`) the model
writes `user: ...` / `memory: ...` lines with `tool_choice: none` — on small local models that
keeps 84% of planted facts where free tool calls keep 16% — and each line becomes one
memory-tool write (scanned and budgeted like any other). `tool_calls` is the classic shape
(free memory calls). `forced` always asks for one forced memory call with a list of adds.

No pretend saves: a reply whose text says it saved something while no memory call landed
is recorded as a refused entry with that reason, so nobody reads "saved" where nothing was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.compress.flush_shapes import FlushShape, build_flush_shape_request, read_flush_reply
from harness.events import Event, FlushEntry, MemoryWritten
from harness.tools import Tool, ToolOutput
from harness.types import Message, ModelReply, ModelRequest, ToolSpec
from memory import FlushMode

__all__ = [
    "CLAIMED_SAVE_REASON",
    "MEMORY_TOOL",
    "FlushOutcome",
    "FlushReply",
    "build_flush_request",
    "claims_a_save",
    "execute_flush_reply",
    "flush_shape",
]

MEMORY_TOOL = "memory"
FlushReply = Literal["tool_calls", "text_list"]
"""How the flush asks for facts: plain `user:`/`memory:` lines, or memory-tool calls."""
CLAIMED_SAVE_REASON = "the reply says it saved this, but made no valid memory call: nothing was saved"

# First-person statements of having saved / remembered something. "Nothing to save." and
# negations do not count.
_CLAIM = re.compile(
    r"\b(?:I(?:'ve| have| will|'ll)?|has been|have been|were|was|are|is|successfully|now)\s+"
    r"(?:\w+\s+){0,2}?(?:saved|stored|remembered|noted|recorded|memorized|added|saving|storing)\b"
    r"|\b(?:saved|stored|added|recorded)\s+(?:to|in|into)\s+(?:your\s+|my\s+|the\s+)?(?:memory|notes|profile)\b"
    r"|\bmemory\s+(?:updated|saved)\b"
    r"|\bI(?:'ll| will)\s+(?:remember|note|keep in mind|save|store)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:nothing|not|no|never|don't|didn't|won't|cannot|can't)\b[^.!?\n]{0,40}$", re.I)


@dataclass(frozen=True, slots=True)
class FlushOutcome:
    """What one flush reply did: an entry per attempted (or claimed) save, and the events."""

    entries: tuple[FlushEntry, ...]
    events: tuple[Event, ...]
    reply_text: str

    @property
    def saved(self) -> tuple[FlushEntry, ...]:
        return tuple(e for e in self.entries if e.saved)


def flush_shape(mode: FlushMode, reply: FlushReply) -> FlushShape:
    """The request shape a flush mode and reply form come to."""
    if mode == "forced":
        return "forced_batch"
    return "text_list" if reply == "text_list" else "free_calls"


def build_flush_request(
    *,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    mode: FlushMode,
    reply: FlushReply = "text_list",
    max_tokens: int | None,
    stable_prefix_chars: int | None = None,
) -> ModelRequest:
    """The one flush request: the transcript plus the shape's note.

    Raises:
        ValueError: `mode` is `off`, or the memory tool is not among `tools`.
    """
    if mode == "off":
        raise ValueError("flush mode 'off' sends no request")
    if not any(t.name == MEMORY_TOOL for t in tools):
        raise ValueError("the flush needs the memory tool in the session's tool list")
    if mode == "memory_only":
        tools = [t for t in tools if t.name == MEMORY_TOOL]
    return build_flush_shape_request(
        flush_shape(mode, reply),
        system=system,
        messages=messages,
        tools=tools,
        max_tokens=max_tokens,
        stable_prefix_chars=stable_prefix_chars,
    )


def claims_a_save(text: str) -> str | None:
    """The sentence of `text` that claims a save, or None."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        match = _CLAIM.search(sentence)
        if match is not None and not _NEGATED.search(sentence[: match.start()]):
            return sentence.strip()[:500]
    return None


def _said(message: Message) -> str:
    calls = " ".join(c.arguments for c in message.tool_calls)
    return f"{message.content} {calls}" if calls else message.content


def _entries_from(call_args: str, out: ToolOutput) -> list[FlushEntry]:
    written = [e for e in out.events if isinstance(e, MemoryWritten)]
    if written:
        return [FlushEntry(target=e.target, action=e.action, content=e.content, saved=True) for e in written]
    return [
        FlushEntry(target="?", action="?", content=call_args[:500], saved=False, reason=out.content[:500])
    ]


async def execute_flush_reply(
    reply: ModelReply, request: ModelRequest, *, shape: FlushShape, memory_tool: Tool | None
) -> FlushOutcome:
    """Turn the flush reply into memory writes (through the memory tool); record the rest.

    Every write the reply asks for runs through `memory_tool` (so the scanner and the budget
    apply); whatever is not a write is a refused entry with its reason; a reply that says it
    saved something while nothing landed is a refused `claimed` entry.
    """
    reading = read_flush_reply(
        shape,
        reply,
        instructions=[request.system, *(t.description for t in request.tools)],
        said="\n".join(_said(m) for m in request.messages),
    )
    entries = [
        FlushEntry(target="-", action="refused", content=r.text[:500], saved=False, reason=r.reason)
        for r in reading.refusals
    ]
    events: list[Event] = []
    for write in reading.writes:
        if memory_tool is None:
            entries.append(
                FlushEntry(write.target, write.action, write.content, saved=False, reason="no memory tool")
            )
            continue
        out = await memory_tool(write.arguments)
        events.extend(out.events)
        entries.extend(_entries_from(write.arguments, out))
    text = reply.message.content
    if not any(e.saved for e in entries):
        claim = claims_a_save(text) or (text.strip()[:500] if reading.claimed_without_call else None)
        if claim is not None:
            entries.append(
                FlushEntry(
                    target="?", action="claimed", content=claim, saved=False, reason=CLAIMED_SAVE_REASON
                )
            )
    return FlushOutcome(tuple(entries), tuple(events), text)
