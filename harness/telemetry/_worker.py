"""The worker side of export-on: records become OpenTelemetry SDK spans and metrics.

`Exporter.drain` empties the record queue (`_record.py`) in order: each record becomes a
`ReadableSpan` with the ids the hot path drew, handed to the SDK's span processor (batching
and the OTLP exporter are the SDK's); a request's cache reuse is attributed (`_cache.py`) and
its tokens counted; a turn's duration goes to the histogram. `Worker` runs `drain` on its
own thread while the turn loop is idle (waiting for the model), so the work stays off the
turn's path.

This module imports the SDK; `open_telemetry` imports it only when export is on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from opentelemetry.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from harness.telemetry import names as n
from harness.telemetry._attrs import (
    Attributes,
    compression_attributes,
    memory_attributes,
    request_attributes,
    step_attributes,
    tool_attributes,
    turn_attributes,
)
from harness.telemetry._record import (
    CompressionRecord,
    MemoryRecord,
    RecordQueue,
    RequestRecord,
    SpanRecord,
    StepRecord,
    ToolRecord,
    TurnRecord,
)
from harness.types import Usage

__all__ = ["Attribution", "Exporter", "Worker"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_VERSION = "0.1.0"


class Attribution(Protocol):
    """The `keel.cache.*` and `keel.phase` attributes of each request, fed in the order requests ended."""

    def __call__(self, r: RequestRecord) -> Attributes: ...

    def forget(self, stream: str) -> None:
        """Drop what is kept for `stream` (its session closed)."""
        ...


class _Instruments:
    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter("keel", _VERSION, schema_url=n.SEMCONV_SCHEMA_URL)
        token = "{token}"
        self.input: Counter = meter.create_counter(
            n.METRIC_INPUT, unit=token, description="Prompt tokens sent (cache reads and writes included)"
        )
        self.cached: Counter = meter.create_counter(
            n.METRIC_CACHED, unit=token, description="Prompt tokens the provider read from its cache"
        )
        self.written: Counter = meter.create_counter(
            n.METRIC_WRITTEN, unit=token, description="Prompt tokens the provider wrote to its cache"
        )
        self.turn: Histogram = meter.create_histogram(
            n.METRIC_TURN_DURATION, unit="s", description="Time from the user's message to the turn's end"
        )
        self.operation: Histogram = meter.create_histogram(
            n.METRIC_OPERATION_DURATION, unit="s", description="GenAI operation duration"
        )


class Exporter:
    """Turns queued records into spans and metrics (see the module docstring).

    Args:
        queue: the records the hot path ended, oldest first.
        processor: the SDK span processor spans go to (batching, then the OTLP exporter).
        resource: the service's resource (`service.name`).
        meters: where metrics go (None: no metrics).
        attribution: the cache attribution of each request (None: no `keel.cache.*`).
        capture: record message content.
        alias: emit `gen_ai.usage.cache_creation.input_tokens` as well.
    """

    def __init__(
        self,
        queue: RecordQueue,
        *,
        processor: SpanProcessor,
        resource: Resource,
        meters: MeterProvider | None = None,
        attribution: Attribution | None = None,
        capture: bool = False,
        alias: bool = False,
    ) -> None:
        self._queue = queue
        self._processor = processor
        self._resource = resource
        self._instruments = None if meters is None else _Instruments(meters)
        self._attribution = attribution
        self._capture = capture
        self._alias = alias
        self._scope = InstrumentationScope("keel", _VERSION, n.SEMCONV_SCHEMA_URL)
        self._sums: dict[int, tuple[Usage, str]] = {}
        """Usage and provider of the requests below each span not yet processed, by span id:
        children end (and are processed) before their parents, so sums roll up to the turn."""
        self._lock = threading.Lock()  # the worker thread and a session's flush both drain

    def drain(self, *, pause: Callable[[], bool] | None = None) -> None:
        """Turn queued records into spans and metrics, oldest first (blocking; any thread), until
        the queue is empty or `pause()` says to stop for now."""
        with self._lock:
            while self._queue and not (pause is not None and pause()):
                self._processor.on_end(self._span(self._queue.popleft()))

    def forget(self, stream: str) -> None:
        """Drop the attribution's state for a closed session's stream (after a drain)."""
        with self._lock:
            if self._attribution is not None:
                self._attribution.forget(stream)

    def _roll_up(self, r: SpanRecord) -> tuple[Usage, str]:
        """The usage of `r`'s requests (itself, for a request), passed on to its parent unless `r`
        is a turn (a subagent's turn inside a tool call keeps its own)."""
        usage, provider = self._sums.pop(r.span_id, (Usage(), ""))
        if isinstance(r, RequestRecord) and r.usage is not None:
            usage, provider = usage + r.usage, r.info.provider
        if r.parent_id and not isinstance(r, TurnRecord) and (provider or usage != Usage()):
            above, above_provider = self._sums.get(r.parent_id, (Usage(), ""))
            self._sums[r.parent_id] = (above + usage, above_provider or provider)
        return usage, provider

    def _span(self, r: SpanRecord) -> ReadableSpan:
        name, kind, attributes = self._describe(r)
        parent = None if not r.parent_id else SpanContext(r.trace_id, r.parent_id, False, _SAMPLED)
        return ReadableSpan(
            name=name,
            context=SpanContext(r.trace_id, r.span_id, False, _SAMPLED),
            parent=parent,
            resource=self._resource,
            attributes=attributes,
            kind=kind,
            status=Status(StatusCode.ERROR, r.error) if r.error else Status(StatusCode.UNSET),
            start_time=r.start_ns,
            end_time=r.end_ns,
            instrumentation_scope=self._scope,
        )

    def _describe(self, r: SpanRecord) -> tuple[str, SpanKind, Attributes]:
        usage, provider = self._roll_up(r)
        if isinstance(r, RequestRecord):
            return f"chat {r.info.model}", SpanKind.CLIENT, self._request(r)
        if isinstance(r, TurnRecord):
            if self._instruments is not None:
                self._instruments.turn.record((r.end_ns - r.start_ns) / 1e9, {n.PROVIDER: provider})
            attributes = turn_attributes(r, usage=usage, provider=provider, alias=self._alias)
            return n.TURN_SPAN, SpanKind.INTERNAL, attributes
        if isinstance(r, ToolRecord):
            kind = SpanKind.CLIENT if r.mcp else SpanKind.INTERNAL
            return f"execute_tool {r.call.name}", kind, tool_attributes(r, capture=self._capture)
        if isinstance(r, MemoryRecord):
            return r.operation, SpanKind.INTERNAL, memory_attributes(r, capture=self._capture)
        if isinstance(r, CompressionRecord):
            return n.COMPRESSION_SPAN, SpanKind.INTERNAL, compression_attributes(r)
        assert isinstance(r, StepRecord)
        return f"{n.COMPRESSION_SPAN}.{r.step}", SpanKind.INTERNAL, step_attributes(r)

    def _request(self, r: RequestRecord) -> Attributes:
        attributes = request_attributes(r, alias=self._alias, capture=self._capture)
        if self._attribution is not None and r.reply is not None:
            attributes.update(self._attribution(r))
        if self._instruments is not None:
            self._count(r, attributes)
        return attributes

    def _count(self, r: RequestRecord, attributes: Attributes) -> None:
        assert self._instruments is not None
        common = {n.PROVIDER: r.info.provider, n.REQUEST_MODEL: r.info.model}
        operation = {n.OPERATION: "chat", **common}
        if r.error is not None:
            operation[n.ERROR_TYPE] = r.error
        self._instruments.operation.record((r.end_ns - r.start_ns) / 1e9, operation)
        usage = r.usage
        if usage is None:
            return
        labels = {
            **common,
            n.KEEL_PURPOSE: r.request.purpose,
            n.KEEL_PHASE: str(attributes.get(n.KEEL_PHASE, "unknown")),
            n.KEEL_CACHE_MISS_CAUSE: str(attributes.get(n.KEEL_CACHE_MISS_CAUSE, "none")),
        }
        self._instruments.input.add(usage.input + usage.cache_read + usage.cache_write, labels)
        self._instruments.cached.add(usage.cache_read, labels)
        self._instruments.written.add(usage.cache_write, labels)


class Worker:
    """Drains the exporter on a daemon thread, in the turn loop's idle time.

    A drain competes with the loop for the interpreter lock, so the worker waits until no
    record has ended for `idle_s` (the loop is waiting for a model) and stops as soon as one
    does — unless the oldest queued record has waited `max_wait_s`, when it drains anyway.
    Each wake-up takes the interpreter lock from the loop too, so a wake that finds nothing
    to do doubles the wait before the next one, up to `max_poll_s` (`next_poll`): a busy or
    idle loop is looked at about 20 times a second, not 500, and a model wait is still
    noticed within `max_poll_s` of its start.
    """

    def __init__(
        self,
        exporter: Exporter,
        queue: RecordQueue,
        *,
        idle_s: float = 0.002,
        max_wait_s: float = 2.0,
        max_poll_s: float = 0.05,
    ) -> None:
        self._exporter = exporter
        self._queue = queue
        self._idle_s = idle_s
        self._idle_ns = int(idle_s * 1e9)
        self._max_wait_ns = int(max_wait_s * 1e9)
        self._max_poll_s = max(idle_s, max_poll_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def busy(self) -> bool:
        """The loop ended a record within `idle_s`, and nothing queued is overdue."""
        q = self._queue
        if not q:
            return False
        now = time.time_ns()
        try:
            newest, oldest = q[-1].end_ns, q[0].end_ns
        except IndexError:  # drained meanwhile by a flush
            return False
        return now - newest < self._idle_ns and now - oldest < self._max_wait_ns

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="keel-telemetry", daemon=True)
        self._thread.start()

    def next_poll(self, previous_s: float, *, drained: bool) -> float:
        """The wait before the next look: `idle_s` right after a drain (more records may
        follow at once), else twice the previous wait, at most `max_poll_s`."""
        if drained:
            return self._idle_s
        return min(self._max_poll_s, max(self._idle_s, previous_s * 2))

    def _run(self) -> None:
        wait = self._idle_s
        while not self._stop.wait(wait):
            drained = bool(self._queue) and not self.busy()
            if drained:
                self._exporter.drain(pause=self.busy)
            wait = self.next_poll(wait, drained=drained)

    def stop(self) -> None:
        """Stop the thread (blocking), then drain what is left."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._exporter.drain()
