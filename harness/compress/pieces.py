"""One memory-only call per piece of the conversation: the loop the flush and the review share.

Both send the turns they read in pieces (`flush.flush_pieces`), one request each, and run
each reply exactly alike: the call under `host.flushing()`, only the reply's memory writes
executed through the memory tool, the outcome logged as a flush record. A call that fails
ends the loop; what earlier pieces saved stays saved. A piece whose reply saved nothing and
went round in a loop (`flush.looping`: "user: none" / "memory: none" to the output cap) is
asked again once, in two halves (`flush.halves`): a shorter piece is one a small model reads. What differs — the request each piece
gets, what to do with the usage and the events — is passed in.

Which system prompt the pieces go under is `flush.flush_system` (the note-taker's for a
`memory_only` flush in pieces).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from harness.compress.flush import FlushOutcome, FlushShape, execute_flush_reply, halves, looping
from harness.compress.host import CompressionHost
from harness.errors import ModelError
from harness.events import UsageReported
from harness.tools import Tool
from harness.types import Message, ModelRequest
from memory import FlushMode

__all__ = ["PiecesRun", "flush_each_piece"]


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
    span: Callable[[int], AbstractContextManager[object]] | None = None,
    via: str = "flush",
) -> PiecesRun:
    """Send each piece in turn (see the module); `on_piece` hears each outcome with its usage
    once it is logged; `span(i)` wraps piece `i` (1-based) for telemetry; `via` names the
    caller (`flush` or `review`) on the entries it saves."""
    outcomes: list[FlushOutcome] = []
    queue: deque[tuple[Sequence[Message], bool]] = deque((p, False) for p in pieces)
    i = 0
    while queue:
        piece, retried = queue.popleft()
        i += 1
        request = request_for(piece)
        with span(i) if span is not None else nullcontext(), host.flushing():
            try:
                reply, usage = await host.call(request)
            except ModelError as exc:
                return PiecesRun(tuple(outcomes), exc)
            outcome = await execute_flush_reply(
                reply, request, shape=shape, memory_tool=tool, memory=host.memory_snapshot, via=via
            )
        await host.record_flush(mode=mode, entries=outcome.entries, reply_text=outcome.reply_text)
        outcomes.append(outcome)
        if on_piece is not None:
            await on_piece(outcome, usage)
        parts = halves(piece)
        if not retried and len(parts) == 2 and not outcome.saved and looping(outcome.reply_text):
            queue.extendleft((part, True) for part in reversed(parts))
    return PiecesRun(tuple(outcomes))
