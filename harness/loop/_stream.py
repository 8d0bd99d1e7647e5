"""A producer task filling an event stream that the caller iterates (how `run_turn` streams).

Never `yield` inside a task group from an async generator: the producer runs as a task and
sends into a memory object stream; this context manager hands out the receive end. If the
consumer leaves early, the producer is cancelled. An exception from the producer is raised
when the block exits, after the stream ended, as itself (not as a group).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from harness.events import Event
from harness.loop.groups import single_error

__all__ = ["produced_events"]


@asynccontextmanager
async def produced_events(
    produce: Callable[[MemoryObjectSendStream[Event]], Awaitable[None]],
) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
    """Run `produce(send)` as a task; yield the receive end of its stream."""
    send, recv = anyio.create_memory_object_stream[Event](max_buffer_size=math.inf)
    failure: list[Exception] = []
    finished = False

    async def task() -> None:
        nonlocal finished
        try:
            async with send:
                await produce(send)
        except Exception as exc:  # surfaced to the caller after the stream ends
            failure.append(exc)
        finally:
            finished = True

    with single_error():
        async with anyio.create_task_group() as tg:
            tg.start_soon(task)
            async with recv:
                yield recv
            if not finished:  # the consumer left early (cancelling costs a task repr: only when needed)
                tg.cancel_scope.cancel()
    if failure:
        raise failure[0]
