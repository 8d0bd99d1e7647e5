"""One reply per identical deterministic request, shared by the arms of one experiment run.

Every arm of `keel eval retention` replays the same conversation into a fresh home, so the
arms send many requests that are byte for byte the same: the warm turn, the summary (the
same middle, whatever the flush saved), a question asked from an unchanged context. At
temperature 0 the model's answer to such a request is fixed, so generating it again only
costs time — minutes per request for a 1.5B model on a CPU — and, worse, can differ by
floating-point noise (a prefix reused from the KV cache is not always bit-identical to a
fresh prefill), which would show up as a difference between arms that the arms did not make.

`SharedReplies` wraps the run's model client: a request at temperature 0 that an earlier
call already sent gets that call's reply (text, tool calls and reported usage) at once.
Requests at any other temperature always reach the model. `latencies` records, for every
call in order, the wall seconds the original generation took when the reply was shared
(None when the model ran), so the report can show what each call costs rather than the
microseconds a shared reply took.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from harness.models.base import ModelClient, ModelEvent, ModelTextDelta, ReplyDone
from harness.types import ModelReply, ModelRequest

__all__ = ["SharedReplies"]


@dataclass(frozen=True, slots=True)
class _Kept:
    reply: ModelReply
    latency_s: float


class SharedReplies:
    """A `ModelClient` that answers a repeated temperature-0 request from the first reply."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self._kept: dict[str, _Kept] = {}
        self.latencies: list[float | None] = []
        """Per call, in order: the original generation's wall seconds if shared, else None."""

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def shared(self) -> int:
        """Calls answered from an earlier reply."""
        return sum(x is not None for x in self.latencies)

    @staticmethod
    def _key(request: ModelRequest) -> str | None:
        # repr of the frozen dataclasses: every field, in order; stable within one process.
        return repr(request) if request.temperature == 0 else None

    async def complete(self, request: ModelRequest) -> ModelReply:
        key = self._key(request)
        kept = None if key is None else self._kept.get(key)
        if kept is not None:
            self.latencies.append(kept.latency_s)
            return kept.reply
        self.latencies.append(None)
        started = anyio.current_time()
        reply = await self.inner.complete(request)
        self._keep(key, reply, anyio.current_time() - started)
        return reply

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        key = self._key(request)
        kept = None if key is None else self._kept.get(key)
        if kept is not None:
            self.latencies.append(kept.latency_s)
            yield _replayed(kept.reply)
            return
        self.latencies.append(None)
        started = anyio.current_time()
        async with self.inner.stream(request) as events:
            yield self._recorded(events, key, started)

    async def _recorded(
        self, events: AsyncIterator[ModelEvent], key: str | None, started: float
    ) -> AsyncIterator[ModelEvent]:
        async for event in events:
            if isinstance(event, ReplyDone):
                self._keep(key, event.reply, anyio.current_time() - started)
            yield event

    def _keep(self, key: str | None, reply: ModelReply, latency_s: float) -> None:
        if key is not None and reply.finish_reason != "cancelled":
            self._kept.setdefault(key, _Kept(reply, latency_s))


async def _replayed(reply: ModelReply) -> AsyncIterator[ModelEvent]:
    if reply.message.content:
        yield ModelTextDelta(reply.message.content)
    yield ReplyDone(reply)
