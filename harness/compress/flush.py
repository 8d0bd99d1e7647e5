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
- `off`: no flush.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from harness.events import Event, FlushEntry, MemoryWritten
from harness.tools import Tool, ToolOutput
from harness.types import Message, ModelReply, ModelRequest, ToolSpec
from memory import FlushMode as MemoryFlushMode
from prompts._text import load_text

__all__ = ["FlushMode", "FlushOutcome", "build_flush_request", "execute_flush_reply"]

FlushMode = MemoryFlushMode  # one definition, shared with the session store
MEMORY_TOOL = "memory"


@dataclass(frozen=True, slots=True)
class FlushOutcome:
    entries: tuple[FlushEntry, ...]
    events: tuple[Event, ...]
    reply_text: str


def build_flush_request(
    *,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    mode: FlushMode,
    max_tokens: int | None,
    stable_prefix_chars: int | None = None,
) -> ModelRequest:
    """The one flush request: the transcript plus the flush note."""
    note = Message(role="user", content=load_text("flush"))
    if mode == "memory_only":
        tools = [t for t in tools if t.name == MEMORY_TOOL]
    return ModelRequest(
        system=system,
        messages=(*messages, note),
        tools=tuple(tools),
        max_tokens=max_tokens,
        purpose="flush",
        stable_prefix_chars=stable_prefix_chars,
    )


def _entries_from(call_args: str, out: ToolOutput) -> list[FlushEntry]:
    written = [e for e in out.events if isinstance(e, MemoryWritten)]
    if written:
        return [FlushEntry(target=e.target, action=e.action, content=e.content, saved=True) for e in written]
    return [
        FlushEntry(target="?", action="?", content=call_args[:500], saved=False, reason=out.content[:500])
    ]


async def execute_flush_reply(
    reply: ModelReply,
    *,
    memory_tool: Tool | None,
    on_output: Callable[[ToolOutput], Awaitable[None]] | None = None,
) -> FlushOutcome:
    """Run the memory calls of the flush reply; refuse every other call."""
    entries: list[FlushEntry] = []
    events: list[Event] = []
    for call in reply.message.tool_calls:
        if call.name != MEMORY_TOOL or memory_tool is None:
            entries.append(
                FlushEntry(
                    target="-",
                    action=call.name,
                    content=call.arguments[:500],
                    saved=False,
                    reason="not available during flush: only the memory tool runs",
                )
            )
            continue
        out = await memory_tool(call.arguments)
        if on_output is not None:
            await on_output(out)
        events.extend(out.events)
        entries.extend(_entries_from(call.arguments, out))
    return FlushOutcome(tuple(entries), tuple(events), reply.message.content)
