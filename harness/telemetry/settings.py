"""Where telemetry goes: the `telemetry` config section read with the standard environment.

`export_settings(config, environ)` is None when export is off — no endpoint in the config,
none in `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
`OTEL_SDK_DISABLED=true`. Otherwise it resolves each setting: the config's value when set,
else the standard variable (the per-signal one first), else the default:

    endpoint   telemetry.otlp_endpoint | OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT (used
               as given) | OTEL_EXPORTER_OTLP_ENDPOINT (a base: http/protobuf appends
               /v1/traces and /v1/metrics; grpc takes it as is)
    protocol   telemetry.protocol | OTEL_EXPORTER_OTLP_{TRACES_,}PROTOCOL | http/protobuf
    headers    OTEL_EXPORTER_OTLP_{TRACES_,METRICS_,}HEADERS (`k=v,k2=v2`, URL-encoded), then
               telemetry.headers (a header name → the variable holding its value) on top
    service    telemetry.service_name | OTEL_SERVICE_NAME | keel
    timeout    OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds) | 10 s

Pure: no OpenTelemetry import, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias
from urllib.parse import unquote

from harness.config import TelemetryConfig
from harness.errors import ConfigError

__all__ = ["ExportSettings", "OtlpProtocol", "export_settings", "parse_headers"]

OtlpProtocol: TypeAlias = Literal["http/protobuf", "grpc"]
_PROTOCOLS: tuple[OtlpProtocol, ...] = ("http/protobuf", "grpc")
DEFAULT_SERVICE = "keel"


@dataclass(frozen=True, slots=True)
class ExportSettings:
    """One resolved export target (see the module docstring for where each value comes from)."""

    protocol: OtlpProtocol
    traces_endpoint: str
    metrics_endpoint: str
    trace_headers: dict[str, str]
    metric_headers: dict[str, str]
    service_name: str
    timeout_s: float
    capture_content: bool
    cache_creation_alias: bool
    cache_attribution: bool


def _signal_url(base: str, protocol: OtlpProtocol, path: str) -> str:
    if protocol == "grpc":
        return base
    return base.rstrip("/") + path


def _protocol(config: TelemetryConfig, env: Mapping[str, str]) -> OtlpProtocol:
    if config.protocol is not None:
        return config.protocol
    value = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if not value:
        return "http/protobuf"
    for protocol in _PROTOCOLS:
        if value.strip() == protocol:
            return protocol
    raise ConfigError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={value!r} is not supported; use http/protobuf or grpc "
        "(or set telemetry.protocol)"
    )


def parse_headers(text: str, *, variable: str) -> dict[str, str]:
    """`k=v,k2=v2` (values URL-encoded), as `OTEL_EXPORTER_OTLP_HEADERS` holds them.

    Raises:
        ConfigError: an item has no `=`; the message names the variable.
    """
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{variable} item {item.strip()!r} is not key=value; write k=v,k2=v2")
        out[unquote(key.strip()).lower()] = unquote(value.strip())
    return out


def _headers(config: TelemetryConfig, env: Mapping[str, str], signal: str) -> dict[str, str]:
    headers = parse_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""), variable="OTEL_EXPORTER_OTLP_HEADERS")
    specific = f"OTEL_EXPORTER_OTLP_{signal}_HEADERS"
    headers.update(parse_headers(env.get(specific, ""), variable=specific))
    for header, variable in config.headers.items():
        value = env.get(variable)
        if value is None:
            raise ConfigError(
                f"telemetry.headers.{header} names the environment variable {variable!r}, which is not "
                "set; set it, or remove the header"
            )
        headers[header.lower()] = value
    return headers


def _timeout(env: Mapping[str, str]) -> float:
    value = env.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    if not value:
        return 10.0
    try:
        return max(float(value) / 1000.0, 0.001)
    except ValueError:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_TIMEOUT={value!r} is not a number of milliseconds") from None


def export_settings(config: TelemetryConfig, environ: Mapping[str, str]) -> ExportSettings | None:
    """The export target, or None when export is off (see the module docstring).

    Raises:
        ConfigError: an unsupported protocol, a malformed header list, a header variable that
            is not set, or a timeout that is not a number.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    base = config.otlp_endpoint or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None
    traces = None if config.otlp_endpoint else environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    metrics = None if config.otlp_endpoint else environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    if base is None and not traces:
        return None
    protocol = _protocol(config, environ)
    traces_url = traces or _signal_url(base or "", protocol, "/v1/traces")
    if metrics:
        metrics_url = metrics
    elif base is not None:
        metrics_url = _signal_url(base, protocol, "/v1/metrics")
    else:  # only a traces endpoint was given: metrics go beside the traces
        metrics_url = traces_url.removesuffix("/v1/traces") + ("" if protocol == "grpc" else "/v1/metrics")
    return ExportSettings(
        protocol=protocol,
        traces_endpoint=traces_url,
        metrics_endpoint=metrics_url,
        trace_headers=_headers(config, environ, "TRACES"),
        metric_headers=_headers(config, environ, "METRICS"),
        service_name=config.service_name or environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE,
        timeout_s=_timeout(environ),
        capture_content=config.capture_content,
        cache_creation_alias=config.cache_creation_alias,
        cache_attribution=config.cache_attribution,
    )
