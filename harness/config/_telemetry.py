"""The `telemetry` section: OpenTelemetry export of spans and metrics (see `harness.telemetry`)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from harness.config._section import Section

__all__ = ["OtlpProtocol", "TelemetryConfig"]

OtlpProtocol = Literal["http/protobuf", "grpc"]
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TelemetryConfig(Section):
    """Export is off unless an endpoint is named here or in `OTEL_EXPORTER_OTLP_ENDPOINT`."""

    otlp_endpoint: str | None = None
    """A base URL (`http://localhost:4318`); `/v1/traces` and `/v1/metrics` are appended for
    http/protobuf. None: `$OTEL_EXPORTER_OTLP_ENDPOINT` (or the per-signal variables), else off."""
    protocol: OtlpProtocol | None = None
    """None: `$OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Export headers: each value names an environment variable holding the header's value
    (added to `$OTEL_EXPORTER_OTLP_HEADERS`)."""
    service_name: str | None = None
    """None: `$OTEL_SERVICE_NAME`, else `keel`."""
    capture_content: bool = False
    """Record messages, system instructions, tool arguments and results, memory queries."""
    cache_creation_alias: bool = False
    """Also emit `gen_ai.usage.cache_creation.input_tokens` (the name before the rename)."""
    cache_attribution: bool = True
    """Compute `keel.cache.*` and `keel.phase` for every request (the cache meter, online)."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"otlp_endpoint {value!r} must be an http:// or https:// base URL")
        return value

    @field_validator("headers")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for header, env in value.items():
            if not _ENV_NAME.match(env):
                raise ValueError(
                    f"headers.{header}: {env!r} is not an environment variable name; the value names "
                    "the variable that holds the header (secrets stay out of the file)"
                )
        return value
