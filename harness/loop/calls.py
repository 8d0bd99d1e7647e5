"""One model-call path for every purpose: turn, flush, summary and search.

Each call is streamed, traced (one JSONL line per request, with the system prompt's slot
map when the request carries the session's prefix), told to telemetry (a `chat` span; a
no-op when export is off), and accounted: the reply's usage — reported, or estimated when
the provider reports none — is added to the session's totals and its row in the session
store. A reported turn usage also anchors the size estimate.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio

from harness.errors import ModelError, SessionError
from harness.events import UsageReported
from harness.lifecycle import CachedPrefix
from harness.loop.estimate import PromptEstimator
from harness.loop.ports import Recorder
from harness.loop.system_prompt import PromptState
from harness.loop.transcript import Transcript
from harness.models.base import ModelClient, ModelTextDelta, PromptProgress, ReplyDone, provider_name
from harness.telemetry import NO_TELEMETRY, RequestInfo, Telemetry
from harness.trace import TraceBreakpoint, TraceParts, TraceRefresh, TraceWriter, record_for_request
from harness.types import ModelReply, ModelRequest, Usage
from harness.usage import usage_counts
from memory import MemoryLayerError
from prompts.slots import SlotSpan

__all__ = ["ModelCalls"]


class ModelCalls:
    """Sends requests to the main or the summary model; traces and accounts each one."""

    def __init__(
        self,
        *,
        model: ModelClient,
        summary_model: ModelClient | None,
        recorder: Recorder,
        estimator: PromptEstimator,
        transcript: Transcript,
        system: PromptState,
        trace: TraceWriter | None,
        warn: Callable[[str], None],
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self.model = model
        self._warn = warn
        self.summary_model = summary_model or model
        self._recorder = recorder
        self.estimator = estimator
        # Read at call time: compression rotates the session id and rebuilds the prompt.
        self._transcript = transcript
        self._system = system
        self.trace = trace
        self.telemetry = telemetry
        self.stream = transcript.session_id
        """The sequence telemetry measures cache reuse over: this object's requests, like its trace."""
        self.usage_total = Usage()
        self._traced = TraceParts()
        self.requests_sent = 0
        self._unsaved_usage = Usage()
        self.prefix: CachedPrefix | None = None
        """The last turn request (the session's cached prefix), for the cache keeper; None after a
        compaction or a new conversation until the next turn request."""

    async def send(
        self,
        request: ModelRequest,
        *,
        summary: bool = False,
        on_text: Callable[[str], Awaitable[None]] | None = None,
        on_progress: Callable[[PromptProgress], None] | None = None,
        refresh: TraceRefresh | None = None,
    ) -> tuple[ModelReply, UsageReported]:
        """Send one request (streamed), trace it, account its usage. `on_progress` hears
        the server's prefill progress, when it reports any.

        `refresh` says why a `keep_warm` request was sent (it goes into its trace line).

        Raises:
            ModelError: the call failed (after the client's retries).
        """
        client = self.summary_model if summary else self.model
        t = self._transcript
        info = RequestInfo(
            model=client.model_name,
            provider=provider_name(client),
            conversation_id=t.lineage_root,
            session_id=t.session_id,
            # after a compression the conversation goes on in a child session
            compacted=t.parent_session_id is not None,
            stream=self.stream,
        )
        with self.telemetry.request(request, info) as span:
            started = time.monotonic()
            try:
                reply = await _stream(client, request, on_text, on_progress, span.first_chunk)
            except ModelError as exc:
                await self._trace(
                    request, client, None, time.monotonic() - started, f"{type(exc).__name__}: {exc}", refresh
                )
                raise
            latency = time.monotonic() - started
            self.requests_sent += 1
            reported = reply.usage is not None
            usage = reply.usage or self.estimator.usage_for(request, reply.message)
            span.replied(reply, usage, reported=reported, slots=self._slots(request))
        self.usage_total = self.usage_total + usage
        await self._save_usage(usage)
        await self._trace(request, client, reply, latency, None, refresh)
        self._remember_prefix(request, started, usage)
        if reported and request.purpose == "turn":
            self.estimator.observe(request, usage, version=self._transcript.version)
        return reply, UsageReported(
            purpose=request.purpose, **usage_counts(usage), reported=reported, latency_s=latency
        )

    def _remember_prefix(self, request: ModelRequest, sent_at: float, usage: Usage) -> None:
        if request.purpose == "turn":
            self.prefix = CachedPrefix(request, sent_at, usage.prompt)
        elif request.purpose == "keep_warm" and self.prefix is not None:
            self.prefix = CachedPrefix(self.prefix.request, sent_at, usage.prompt)

    def _slots(self, request: ModelRequest) -> tuple[SlotSpan, ...]:
        """The slot map, when the request carries the session's prefix (the same test as the trace's)."""
        return self._system.prompt.slots if request.system == self._system.text else ()

    async def _save_usage(self, usage: Usage) -> None:
        # A store that refuses the counters (locked by another process) must not end the
        # turn: they are carried over and added with the next call's.
        pending = self._unsaved_usage + usage
        try:
            await self._recorder.add_usage(self._transcript.session_id, pending)
        except (MemoryLayerError, OSError) as exc:
            self._unsaved_usage = pending
            self._warn(f"the session store refused the usage counters ({exc}); they will be added later")
            return
        self._unsaved_usage = Usage()

    async def _trace(
        self,
        request: ModelRequest,
        client: ModelClient,
        reply: ModelReply | None,
        latency: float,
        error: str | None,
        refresh: TraceRefresh | None = None,
    ) -> None:
        if self.trace is None:
            return
        system = self._system.text
        record = record_for_request(
            request,
            session_id=self._transcript.session_id,
            turn=self._transcript.turn,
            model=client.model_name,
            slots=self._system.trace_slots() if request.system == system else [],
            usage=None if reply is None else reply.usage,
            latency_s=latency,
            error=error,
            breakpoints=[]
            if reply is None
            else [
                TraceBreakpoint(at=b.at, index=b.index, system_chars=b.system_chars)
                for b in reply.breakpoints
            ],
            cache_ttl=None if reply is None else reply.cache_ttl,
            refresh=refresh,
            kept=self._traced,
        )
        # A turn request that calls tools is followed by another: its line goes with that one's.
        calls_tools = reply is not None and bool(reply.message.tool_calls) and request.purpose == "turn"
        await self.trace.write(record, self._traced, hold=calls_tools)

    async def flush_trace(self) -> None:
        """Write the trace lines still held (a turn that ended after a request that called tools)."""
        if self.trace is not None:
            with anyio.CancelScope(shield=True):
                await self.trace.flush()


async def _stream(
    client: ModelClient,
    request: ModelRequest,
    on_text: Callable[[str], Awaitable[None]] | None,
    on_progress: Callable[[PromptProgress], None] | None,
    on_first: Callable[[], None],
) -> ModelReply:
    reply: ModelReply | None = None
    first = True
    async with client.stream(request) as events:
        async for ev in events:
            if isinstance(ev, PromptProgress):
                if on_progress is not None:
                    on_progress(ev)
                continue  # not the reply's first chunk: the prompt is still being read
            if first:
                first = False
                on_first()
            if isinstance(ev, ModelTextDelta):
                if on_text is not None:
                    await on_text(ev.text)
            elif isinstance(ev, ReplyDone):
                reply = ev.reply
    if reply is None:
        raise SessionError("the model stream ended without a reply")
    return reply
