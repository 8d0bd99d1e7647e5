"""A small OTLP/HTTP receiver: decodes what it is sent with `opentelemetry-proto`, writes JSON lines.

    python -m harness.testing.otlp_receiver OUT.jsonl

For testing what keel (or your agent built on it) exports, without a collector; it needs the
`otel` extra. Not imported by `harness.testing` itself.

It listens on 127.0.0.1 (a free port, printed as the first line of stdout), answers
`POST /v1/traces` and `POST /v1/metrics` (gzip or plain protobuf) and appends one line per
span (`{"signal": "span", "name", "trace_id", "span_id", "parent_span_id", "kind",
"status", "attributes", "service"}`) or per metric (`{"signal": "metric", "name", "points"}`)
to OUT.jsonl, flushed at once. It runs until it is terminated.
"""

from __future__ import annotations

import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock
from typing import Any

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

_lock = Lock()


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which is None:
        return None
    return getattr(v, which)


def _attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


def _spans(body: bytes) -> list[dict[str, Any]]:
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    out: list[dict[str, Any]] = []
    for rs in request.resource_spans:
        service = _attributes(rs.resource.attributes).get("service.name")
        for ss in rs.scope_spans:
            for span in ss.spans:
                out.append(
                    {
                        "signal": "span",
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "kind": span.kind,
                        "status": span.status.code,
                        "start": span.start_time_unix_nano,
                        "attributes": _attributes(span.attributes),
                        "service": service,
                    }
                )
    return out


def _metrics(body: bytes) -> list[dict[str, Any]]:
    request = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
    out: list[dict[str, Any]] = []
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                points = getattr(metric, kind).data_points if kind else []
                out.append(
                    {
                        "signal": "metric",
                        "name": metric.name,
                        "points": [
                            {
                                "attributes": _attributes(p.attributes),
                                "value": p.as_int if kind == "sum" else None,
                                "count": getattr(p, "count", None),
                            }
                            for p in points
                        ],
                    }
                )
    return out


def main(out: Path) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the http.server hook's name
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                lines = _spans(body)
                reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            elif self.path == "/v1/metrics":
                lines = _metrics(body)
                reply = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
            else:
                self.send_response(404)
                self.end_headers()
                return
            with _lock, out.open("a", encoding="utf-8") as fh:
                for line in lines:
                    fh.write(json.dumps(line) + "\n")
                fh.flush()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
