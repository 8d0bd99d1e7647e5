"""The HTTP error boundary: status → error class, provider messages, Retry-After parsing."""

from __future__ import annotations

import httpx
import pytest

from harness.errors import (
    ModelAuthError,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
)
from harness.models._http import error_for_status, parse_retry_after, provider_message

NOW = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("5", 5.0),
        (" 1.5 ", 1.5),
        ("-3", 0.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # already past: retry now
        ("soon", None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_retry_after_reads_seconds_and_http_dates(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, ModelRequestError),
        (401, ModelAuthError),
        (403, ModelAuthError),
        (404, ModelRequestError),
        (408, ModelTimeoutError),
        (413, ModelRequestError),
        (422, ModelRequestError),
        (429, ModelRateLimitError),
        (500, ModelServerError),
        (502, ModelServerError),
        (503, ModelServerError),
        (529, ModelServerError),
    ],
)
def test_each_status_maps_to_the_error_of_who_must_act(status: int, kind: type[ModelError]) -> None:
    error = error_for_status(
        status, body="{}", headers=httpx.Headers(), what="Test POST /x", api_key_env="KEY", now=NOW
    )
    assert type(error) is kind
    assert error.status == status
    assert f"HTTP {status}" in str(error)


def test_server_errors_carry_retry_after_too() -> None:
    error = error_for_status(
        503, body="", headers=httpx.Headers({"Retry-After": "4"}), what="w", api_key_env="K", now=NOW
    )
    assert isinstance(error, ModelServerError)
    assert error.retry_after == 4.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"error": {"message": "bad model", "type": "invalid_request_error"}}',
            "invalid_request_error: bad model",
        ),
        (
            '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "overloaded_error: Overloaded",
        ),
        ('{"error": "model not found"}', "model not found"),
        ('{"detail": "Not Found"}', '"Not Found"'),
        ('{"message": "plain"}', "plain"),
        ("upstream connect error", "upstream connect error"),
        ("", "(empty body)"),
    ],
)
def test_the_provider_message_is_found_in_every_common_error_shape(body: str, message: str) -> None:
    assert provider_message(body) == message
