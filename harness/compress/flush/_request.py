"""The one flush request: which mode, which shape, and what it sends.

Modes (`compression.flush`):
- `memory_only`: the request carries only the memory tool (the classic design). Cheaper to
  decode, but a different tool list means a different prefix: most caches re-prefill it all.
- `cache_safe`: the request carries the session's unchanged tool list, so the prefix
  matches the previous turn's; calls to other tools are answered "not available during
  flush" and not run.
- `forced`: the unchanged tool list with `tool_choice` naming the memory tool, so the prefix
  stays cached and the model can only call memory.
- `off`: no flush.

How the request asks for the facts is the *shape*; `benchmarks/local_flush.py` measures each
on real models:

- `free_calls`: the classic note (`flush.md`), `tool_choice: auto` — the model may call the
  memory tool as often as it likes, or not at all.
- `forced_call`: `tool_choice` names the memory tool, so the reply is exactly one memory
  call (one fact per flush at most).
- `forced_batch`: the same forced call, but the note (`flush_batch.md`) asks for every fact
  in one call as an `operations` list of adds.
- `text_list`: `tool_choice: none` and a note (`flush_list.md`) asking for plain lines
  `user: <fact>` / `memory: <fact>`; lines of any other form are refused.

By default (`compression.flush_reply: text_list`) `memory_only` and `cache_safe` use the
`text_list` shape (on small local models it keeps 84% of planted facts where free tool calls
keep 16%); `tool_calls` is the classic `free_calls`; `forced` is always `forced_batch`.

Every shape leaves `system` and `tools` exactly as the caller gives them: only the final note
and `tool_choice` differ. Which system prompt the caller gives is `flush_system`: the
session's own for a whole-transcript flush or a cache-keeping mode (`cache_safe`, `forced`),
whose prefix is cached; the note-taker's (`flush_system.md`, no memory block) for the pieces
of a `memory_only` one. A piece starts mid-conversation, so nothing after the system prompt
was cached anyway, and a small model shown its memory block next to a short excerpt copies
the block back instead of reading the excerpt (measured with Qwen2.5-Coder-1.5B through
three compressions: the second and third flush re-wrote the memory block entry for entry and
saved no fact of their own pieces). The note-taker prompt is the same for every piece, so
the server reads it from its cache after the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from harness.types import Message, ModelRequest, ToolChoice, ToolSpec
from memory import MEMORY_TOOL_NAME, FlushMode
from prompts import load_text

__all__ = [
    "FLUSH_SHAPES",
    "FlushReply",
    "FlushShape",
    "build_flush_request",
    "build_flush_shape_request",
    "flush_note",
    "flush_shape",
    "flush_system",
]

FlushShape: TypeAlias = Literal["free_calls", "forced_call", "forced_batch", "text_list"]
FLUSH_SHAPES: tuple[FlushShape, ...] = ("free_calls", "forced_call", "forced_batch", "text_list")
FlushReply = Literal["tool_calls", "text_list"]
"""How the flush asks for facts: plain `user:`/`memory:` lines, or memory-tool calls."""

_NOTES: dict[FlushShape, str] = {
    "free_calls": "flush",
    "forced_call": "flush_forced",
    "forced_batch": "flush_batch",
    "text_list": "flush_list",
}
_CHOICE: dict[FlushShape, ToolChoice] = {
    "free_calls": "auto",
    "forced_call": MEMORY_TOOL_NAME,
    "forced_batch": MEMORY_TOOL_NAME,
    "text_list": "none",
}


def flush_note(shape: FlushShape) -> str:
    """The note a `shape` request ends with (the flush's instructions)."""
    return load_text(_NOTES[shape])


def flush_shape(mode: FlushMode, reply: FlushReply) -> FlushShape:
    """The request shape a flush mode and reply form come to."""
    if mode == "forced":
        return "forced_batch"
    return "text_list" if reply == "text_list" else "free_calls"


def flush_system(mode: FlushMode, *, in_pieces: bool, session_system: str) -> str:
    """The system prompt a flush (or memory review) of `mode` goes under (see the module)."""
    if in_pieces and mode == "memory_only":
        return load_text("flush_system")
    return session_system


def build_flush_shape_request(
    shape: FlushShape,
    *,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    max_tokens: int | None,
    stable_prefix_chars: int | None = None,
    note: str | None = None,
) -> ModelRequest:
    """The one flush request of `shape`: `system` and `tools` unchanged, the shape's note last
    (or `note`, for a request that asks the same way for another reason: the memory review).

    A shape that needs the memory tool (all but `text_list`) falls back to `tool_choice:
    none` when `tools` lacks it, so the request stays valid; its reply then holds no writes.
    """
    choice = _CHOICE[shape]
    if choice == MEMORY_TOOL_NAME and not any(t.name == MEMORY_TOOL_NAME for t in tools):
        choice = "none"
    return ModelRequest(
        system=system,
        messages=(*messages, Message(role="user", content=flush_note(shape) if note is None else note)),
        tools=tuple(tools),
        tool_choice=choice if tools else "auto",
        max_tokens=max_tokens,
        temperature=0.0,
        purpose="flush",
        stable_prefix_chars=stable_prefix_chars,
    )


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
    """The one flush request of a session's `mode`: the transcript plus the shape's note.

    Raises:
        ValueError: `mode` is `off`, or the memory tool is not among `tools`.
    """
    if mode == "off":
        raise ValueError("flush mode 'off' sends no request")
    if not any(t.name == MEMORY_TOOL_NAME for t in tools):
        raise ValueError("the flush needs the memory tool in the session's tool list")
    if mode == "memory_only":
        tools = [t for t in tools if t.name == MEMORY_TOOL_NAME]
    return build_flush_shape_request(
        flush_shape(mode, reply),
        system=system,
        messages=messages,
        tools=tools,
        max_tokens=max_tokens,
        stable_prefix_chars=stable_prefix_chars,
    )
