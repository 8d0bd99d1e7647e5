"""Where export goes: the `telemetry` section read together with the standard OTEL_* variables."""

from __future__ import annotations

import pytest

from harness.config import TelemetryConfig
from harness.errors import ConfigError
from harness.telemetry.settings import export_settings, parse_headers


def test_export_is_off_without_an_endpoint_anywhere() -> None:
    assert export_settings(TelemetryConfig(), {}) is None


def test_a_configured_base_url_gets_the_signal_paths_for_http() -> None:
    s = export_settings(TelemetryConfig(otlp_endpoint="http://collector:4318/"), {})
    assert s is not None
    assert s.protocol == "http/protobuf"
    assert s.traces_endpoint == "http://collector:4318/v1/traces"
    assert s.metrics_endpoint == "http://collector:4318/v1/metrics"
    assert s.service_name == "keel"
    assert s.capture_content is False


def test_the_standard_variables_turn_export_on_and_fill_what_the_config_leaves_unset() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-team=agents,authorization=Bearer%20abc",
        "OTEL_SERVICE_NAME": "support-bot",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
    }
    s = export_settings(TelemetryConfig(), env)
    assert s is not None
    assert s.traces_endpoint == "http://otel:4318/v1/traces"
    assert s.trace_headers == {"x-team": "agents", "authorization": "Bearer abc"}
    assert s.service_name == "support-bot"
    assert s.timeout_s == 2.5


def test_per_signal_endpoints_are_used_as_given() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/custom/traces",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:4318/custom/metrics",
    }
    s = export_settings(TelemetryConfig(), env)
    assert s is not None
    assert (s.traces_endpoint, s.metrics_endpoint) == (
        "http://t:4318/custom/traces",
        "http://m:4318/custom/metrics",
    )


def test_the_config_wins_over_the_environment() -> None:
    cfg = TelemetryConfig(otlp_endpoint="http://mine:4318", service_name="mine", protocol="http/protobuf")
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://theirs:4318",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://theirs:4318/v1/traces",
        "OTEL_SERVICE_NAME": "theirs",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
    }
    s = export_settings(cfg, env)
    assert s is not None
    assert s.traces_endpoint == "http://mine:4318/v1/traces"
    assert s.service_name == "mine"
    assert s.protocol == "http/protobuf"


def test_grpc_takes_the_endpoint_without_paths() -> None:
    s = export_settings(TelemetryConfig(otlp_endpoint="http://collector:4317", protocol="grpc"), {})
    assert s is not None
    assert s.traces_endpoint == s.metrics_endpoint == "http://collector:4317"


def test_configured_headers_name_the_variables_holding_their_values() -> None:
    cfg = TelemetryConfig(otlp_endpoint="http://c:4318", headers={"X-Api-Key": "HONEYCOMB_KEY"})
    s = export_settings(cfg, {"HONEYCOMB_KEY": "secret", "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=other"})
    assert s is not None
    assert s.trace_headers == {"x-api-key": "secret"}
    with pytest.raises(ConfigError, match="HONEYCOMB_KEY"):
        export_settings(cfg, {})


def test_otel_sdk_disabled_turns_everything_off() -> None:
    cfg = TelemetryConfig(otlp_endpoint="http://c:4318")
    assert export_settings(cfg, {"OTEL_SDK_DISABLED": "true"}) is None


def test_bad_values_say_what_to_write() -> None:
    with pytest.raises(ConfigError, match="http/protobuf or grpc"):
        export_settings(
            TelemetryConfig(),
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
        )
    with pytest.raises(ConfigError, match="key=value"):
        parse_headers("novalue", variable="OTEL_EXPORTER_OTLP_HEADERS")
    with pytest.raises(ValueError, match="base URL"):
        TelemetryConfig(otlp_endpoint="collector:4318")
    with pytest.raises(ValueError, match="environment variable name"):
        TelemetryConfig(headers={"x": "not a name"})
