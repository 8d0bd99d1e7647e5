"""`open_telemetry`: the session's telemetry for the `async with` block (off unless configured)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread

from harness.config import TelemetryConfig
from harness.telemetry.port import NO_TELEMETRY, Telemetry
from harness.telemetry.settings import export_settings

__all__ = ["open_telemetry"]


@asynccontextmanager
async def open_telemetry(config: TelemetryConfig, environ: Mapping[str, str]) -> AsyncIterator[Telemetry]:
    """`NO_TELEMETRY` when export is off (OpenTelemetry is not even imported); otherwise an
    OTLP export started for the block and, on exit, drained, exported and shut down.

    Raises:
        ConfigError: the settings cannot be resolved (`harness.telemetry.settings`).
    """
    settings = export_settings(config, environ)
    if settings is None:
        yield NO_TELEMETRY
        return
    from harness.telemetry._export import Export  # the SDK, only now

    export = Export.start(settings)
    try:
        yield export.telemetry
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(export.close)
