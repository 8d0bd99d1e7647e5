"""One memory-only call per piece of the conversation: the loop the flush and the review share.

Both send the turns they read in pieces (`flush.flush_pieces`), one request each, and run
each reply exactly alike: the call under `host.flushing()`, only the reply's memory writes
executed through the memory tool, the outcome logged as a flush record. A call that fails
ends the loop; what earlier pieces saved stays saved. What differs — the request each piece
gets, what to do with the usage and the events — is passed in.

A request of the whole transcript keeps the session's system prompt (its prefix is cached).
A piece does not: it starts mid-conversation, so nothing after the system prompt is cached
anyway, and a small model shown its memory block next to a short excerpt copies the block
back instead of reading the excerpt (measured with Qwen2.5-Coder-1.5B through three
compressions: the second and third flush re-wrote the memory block entry for entry and
saved no fact of their own pieces). A piece goes with a short system prompt of its own
(`prompts/text/flush_system.md`) that holds no memory; the same for every piece, so the
server reads it from its cache after the first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from harness.compress.flush import FlushOutcome, FlushShape, execute_flush_reply
from harness.compress.host import CompressionHost, CompressionSettings
from harness.errors import ModelError
from harness.events import UsageReported
from harness.tools import Tool
from harness.types import Message, ModelRequest
from memory import FlushMode
from prompts import load_text

__all__ = ["PiecesRun", "flush_each_piece", "piece_system"]


def piece_system(host: CompressionHost, settings: CompressionSettings, mode: FlushMode) -> str:
    """The system prompt of a flush or review request: the session's own for the whole
    transcript or a cache-keeping mode (`cache_safe`, `forced`), the note-taker's (no memory
    block) for the pieces of a `memory_only` one (see the module)."""
    if settings.flush_chunk_tokens and mode == "memory_only":
        return load_text("flush_system")
    return host.system_prompt


@dataclass(frozen=True, slots=True)
class PiecesRun:
    """The outcomes of the pieces that ran, in order, and the error that stopped the rest."""

    outcomes: tuple[FlushOutcome, ...]
    error: ModelError | None = None


async def flush_each_piece(
    host: CompressionHost,
    pieces: Sequence[Sequence[Message]],
    *,
    request_for: Callable[[Sequence[Message]], ModelRequest],
    shape: FlushShape,
    tool: Tool,
    mode: FlushMode,
    on_piece: Callable[[FlushOutcome, UsageReported], Awaitable[None]] | None = None,
) -> PiecesRun:
    """Send each piece in turn (see the module); `on_piece` hears each outcome with its usage
    once it is logged."""
    outcomes: list[FlushOutcome] = []
    for piece in pieces:
        request = request_for(piece)
        with host.flushing():
            try:
                reply, usage = await host.call(request)
            except ModelError as exc:
                return PiecesRun(tuple(outcomes), exc)
            outcome = await execute_flush_reply(reply, request, shape=shape, memory_tool=tool)
        await host.record_flush(mode=mode, entries=outcome.entries, reply_text=outcome.reply_text)
        outcomes.append(outcome)
        if on_piece is not None:
            await on_piece(outcome, usage)
    return PiecesRun(tuple(outcomes))
