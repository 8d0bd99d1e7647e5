# OpenTelemetry export of what a session does: GenAI-convention spans and keel's cache metrics.
# `port.py` (the `Telemetry` protocol the loop calls, and `NO_TELEMETRY`), `names.py` (every
# span, attribute and metric name, and the pinned conventions), `settings.py` (the config and
# the standard OTEL_* variables resolved), `_open.py` (`open_telemetry`). Export on:
# `_record.py` (the hot path: plain records queued), `_worker.py` (records → SDK spans and
# metrics on a thread), `_attrs.py` (names and attributes), `_export.py` (the SDK pipeline).
# Only `_worker.py` and `_export.py` import OpenTelemetry, and only when export is on.
from harness.telemetry._open import open_telemetry
from harness.telemetry._record import trace_context
from harness.telemetry.port import NO_TELEMETRY, NoTelemetry, RequestInfo, Telemetry

__all__ = ["NO_TELEMETRY", "NoTelemetry", "RequestInfo", "Telemetry", "open_telemetry", "trace_context"]
