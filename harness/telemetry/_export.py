"""Export on: the SDK's providers and OTLP exporters, the worker, and their shutdown.

`Export.start(settings)` builds, in order: the resource (`service.name`), the OTLP span and
metric exporters for the configured protocol, the SDK's batch span processor and periodic
metric reader, the `Exporter` and its `Worker` thread, and an `atexit` hook so spans still
queued when the process exits are exported. `close` undoes it in reverse. Tests build an
`Export` around the SDK's in-memory exporter and reader instead (`Export(processor=...)`).

Imports the SDK at import time: only `open_telemetry` imports this module, and only when
export is on.
"""

from __future__ import annotations

import atexit
from collections import deque

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from harness.telemetry._cache import CacheAttribution
from harness.telemetry._record import Recording, SpanRecord
from harness.telemetry._worker import Attribution, Exporter, Worker
from harness.telemetry.settings import ExportSettings

__all__ = ["Export"]

_MAX_QUEUED = 1 << 16


def _exporters(settings: ExportSettings) -> tuple[SpanExporter, MetricExporter]:
    timeout = settings.timeout_s
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        return (
            GrpcSpans(
                endpoint=settings.traces_endpoint,
                headers=tuple(settings.trace_headers.items()),
                timeout=timeout,
            ),
            GrpcMetrics(
                endpoint=settings.metrics_endpoint,
                headers=tuple(settings.metric_headers.items()),
                timeout=timeout,
            ),
        )
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return (
        OTLPSpanExporter(endpoint=settings.traces_endpoint, headers=settings.trace_headers, timeout=timeout),
        OTLPMetricExporter(
            endpoint=settings.metrics_endpoint, headers=settings.metric_headers, timeout=timeout
        ),
    )


class Export:
    """One export pipeline: the queue the sessions' records go to, and what drains it.

    Args:
        processor: the span processor spans are handed to.
        meters: the meter provider metrics are recorded in (None: no metrics).
        resource: the service's resource.
        attribution: computes each request's `keel.cache.*` attributes (None: none).
        capture, alias: see `telemetry.capture_content` and `telemetry.cache_creation_alias`.
    """

    def __init__(
        self,
        *,
        processor: SpanProcessor,
        meters: MeterProvider | None = None,
        resource: Resource | None = None,
        attribution: Attribution | None = None,
        capture: bool = False,
        alias: bool = False,
    ) -> None:
        # bounded: a loop outrunning its export for long loses the oldest records, not memory
        self._queue: deque[SpanRecord] = deque(maxlen=_MAX_QUEUED)
        self._processor = processor
        self._meters = meters
        self.exporter = Exporter(
            self._queue,
            processor=processor,
            resource=resource or Resource.create({"service.name": "keel"}),
            meters=meters,
            attribution=attribution,
            capture=capture,
            alias=alias,
        )
        self._worker = Worker(self.exporter, self._queue)
        self.telemetry = Recording(self._queue, self.flush, self.exporter.forget)
        self._closed = False

    @classmethod
    def start(cls, settings: ExportSettings) -> Export:
        """Build the OTLP pipeline `settings` describe and start its worker (no I/O yet)."""
        resource = Resource.create({"service.name": settings.service_name})
        spans, metrics = _exporters(settings)
        export = cls(
            processor=BatchSpanProcessor(spans),
            meters=MeterProvider(
                resource=resource,
                metric_readers=[PeriodicExportingMetricReader(metrics)],
                shutdown_on_exit=False,
            ),
            resource=resource,
            attribution=CacheAttribution() if settings.cache_attribution else None,
            capture=settings.capture_content,
            alias=settings.cache_creation_alias,
        )
        export.begin()
        return export

    def begin(self) -> None:
        """Start the worker thread and the exit hook."""
        self._worker.start()
        atexit.register(self.close)

    def flush(self) -> None:
        """Turn every queued record into spans and export them now (blocking)."""
        self.exporter.drain()
        self._processor.force_flush()
        if self._meters is not None:
            self._meters.force_flush()

    def close(self) -> None:
        """Stop the worker, export what is left, shut the SDK down (blocking; idempotent)."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._worker.stop()
        self._processor.shutdown()
        if self._meters is not None:
            self._meters.shutdown()
