"""`open_telemetry`: the session's telemetry for the `async with` block (off unless configured)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread

from harness.config import TelemetryConfig
from harness.errors import ConfigError
from harness.telemetry.port import NO_TELEMETRY, Telemetry
from harness.telemetry.settings import export_settings

__all__ = ["open_telemetry"]


@asynccontextmanager
async def open_telemetry(config: TelemetryConfig, environ: Mapping[str, str]) -> AsyncIterator[Telemetry]:
    """`NO_TELEMETRY` when export is off (OpenTelemetry is not even imported); otherwise an
    OTLP export started for the block and, on exit, drained, exported and shut down.

    Raises:
        ConfigError: the settings cannot be resolved (`harness.telemetry.settings`), or
            export is on and the `otel` extra is not installed.
    """
    settings = export_settings(config, environ)
    if settings is None:
        yield NO_TELEMETRY
        return
    try:
        from harness.telemetry._export import Export  # the SDK, only now
    except ImportError as exc:
        raise ConfigError(
            f"telemetry export is configured but OpenTelemetry is not installed ({exc}); install it "
            "with `pip install 'keel[otel]'`, or unset telemetry.otlp_endpoint and OTEL_EXPORTER_OTLP_ENDPOINT"
        ) from exc

    export = Export.start(settings)
    try:
        yield export.telemetry
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(export.close)
