"""The export pipeline: which OTLP exporters a protocol gets, the hot path's trace context,
and a session's close exporting everything it ended."""

from __future__ import annotations

from collections import deque

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans

from harness.config import TelemetryConfig
from harness.telemetry import trace_context
from harness.telemetry._export import _exporters
from harness.telemetry._record import Recording, SpanRecord, traceparent
from harness.telemetry.settings import export_settings
from harness.types import ToolCall


def test_each_protocol_gets_the_sdks_own_otlp_exporter() -> None:
    http = export_settings(TelemetryConfig(otlp_endpoint="http://c:4318"), {})
    grpc = export_settings(TelemetryConfig(otlp_endpoint="http://c:4317", protocol="grpc"), {})
    assert http is not None and grpc is not None
    spans, _ = _exporters(http)
    assert isinstance(spans, HttpSpans)
    spans, _ = _exporters(grpc)
    assert isinstance(spans, GrpcSpans)


def test_trace_context_names_the_current_span_and_nothing_outside_one() -> None:
    queue: deque[SpanRecord] = deque()
    telemetry = Recording(queue, lambda: None)
    assert trace_context() == {}
    with telemetry.turn(conversation_id="c", session_id="s", turn=1) as turn:
        with telemetry.tool(ToolCall("call_1", "proj__grep", "{}"), mcp=True) as tool:
            assert trace_context() == {"traceparent": traceparent(turn.trace_id, tool.span_id)}
        assert trace_context() == {"traceparent": traceparent(turn.trace_id, turn.span_id)}
    assert trace_context() == {}
    assert [r.kind for r in queue] == ["tool", "turn"]  # queued as they end, children first
    assert queue[0].parent_id == queue[1].span_id
