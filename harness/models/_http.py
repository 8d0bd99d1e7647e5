"""The one boundary where HTTP failures become `harness.errors` model errors.

Both clients send through an `Endpoint` (URL, headers, the injected httpx client).
`Deadline.scope()` is the only place a model call's timeout is enforced (an
`anyio.fail_after` scope over the remaining time of the whole call; httpx's own timeouts are
switched off per request) and the only place httpx exceptions are translated.
`error_for_status` turns a non-2xx reply into the error class of whoever must act;
`parse_retry_after` reads `Retry-After` in both of its forms.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager

import anyio
import httpx
from pydantic import JsonValue

from harness.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)
from harness.types import JsonObject

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_ERROR_BODY_BYTES",
    "Deadline",
    "Endpoint",
    "error_for_status",
    "parse_json_object",
    "parse_retry_after",
    "provider_message",
    "read_capped",
    "snippet",
]

MAX_BODY_BYTES = 16 * 1024 * 1024
"""A whole (non-streamed) reply body larger than this is an error: read in chunks, never whole."""

MAX_ERROR_BODY_BYTES = 64 * 1024
"""Of an error reply's body only this much is read (its message is quoted in the error)."""

# Per-request httpx timeout: off. The deadline scope below is the single timeout, so an
# injected client's default (5 s read) cannot cut a slow local prefill short.
NO_HTTPX_TIMEOUT = httpx.Timeout(None)


def snippet(text: str, limit: int = 200) -> str:
    """The start of `text`, for error messages."""
    return text if len(text) <= limit else text[:limit] + "…"


class Deadline:
    """The deadline of one model call, shared by every read of that call.

    Args:
        seconds: Time allowed for the whole call, from construction; with `silence`, time
            allowed without any sign of progress (each `touch` starts it again).
        what: Names the call in error messages (e.g. `"OpenAI POST http://…/chat/completions"`).
        silence: Measure silence, not the whole call: a reply that keeps arriving (text,
            keep-alive bytes, progress comments of a long prefill) is never cut off.
    """

    def __init__(self, seconds: float, *, what: str, silence: bool = False) -> None:
        self.seconds = seconds
        self.what = what
        self.silence = silence
        self._at = anyio.current_time() + seconds

    def touch(self) -> None:
        """Something arrived: with `silence`, the full time is allowed again from now."""
        if self.silence:
            self._at = anyio.current_time() + self.seconds

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Run a piece of the call under the remaining time, translating transport errors."""
        remaining = max(self._at - anyio.current_time(), 0.0)
        try:
            with anyio.fail_after(remaining):
                yield
        except TimeoutError as exc:
            said = (
                f"was silent for {self.seconds:g} s (no text, progress or keep-alive)"
                if self.silence
                else f"gave no complete answer within {self.seconds:g} s"
            )
            raise ModelTimeoutError(
                f"{self.what} {said}; raise model.timeout_s if the endpoint is just slow"
            ) from exc
        except httpx.TimeoutException as exc:
            raise ModelTimeoutError(f"{self.what} timed out: {type(exc).__name__}: {exc}") from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            # ConnectError, ReadError, WriteError, CloseError, and a peer that closed the
            # connection mid-reply (RemoteProtocolError) all mean "the connection failed".
            raise ModelConnectionError(
                f"{self.what} failed: the connection broke ({type(exc).__name__}: {exc}); "
                "check that the endpoint is up and model.base_url is right"
            ) from exc
        except httpx.HTTPError as exc:
            raise ModelConnectionError(f"{self.what} failed: {type(exc).__name__}: {exc}") from exc


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date.

    Args:
        value: The header value, or None when absent.
        now: The current Unix time (for the HTTP-date form).

    Returns:
        A non-negative delay, or None when the header is absent or unreadable.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - now
    if seconds != seconds or seconds == float("inf"):  # NaN or inf: unreadable
        return None
    return max(seconds, 0.0)


def provider_message(body: str) -> str:
    """The error text a provider put in its error body, whatever its shape."""
    try:
        data: JsonValue = json.loads(body)
    except ValueError:
        return snippet(body.strip(), 500) or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            message = err.get("message")
            if isinstance(message, str):
                kind = err.get("type")
                return f"{kind}: {message}" if isinstance(kind, str) else message
        if isinstance(err, str):
            return err
        detail = data.get("detail")  # FastAPI servers, e.g. llama-cpp-python's validation errors
        if detail is not None:
            return snippet(json.dumps(detail, ensure_ascii=False), 500)
        message = data.get("message")
        if isinstance(message, str):
            return message
    return snippet(body.strip(), 500)


def error_for_status(
    status: int,
    *,
    body: str,
    headers: httpx.Headers,
    what: str,
    api_key_env: str,
    now: float,
) -> ModelError:
    """The error for a non-2xx response.

    Args:
        status: The HTTP status.
        body: The response body as text.
        headers: The response headers (for `Retry-After`).
        what: Names the call in the message.
        api_key_env: The environment variable the key came from, named in auth errors.
        now: Current Unix time, for an HTTP-date `Retry-After`.
    """
    detail = provider_message(body)
    if status in (401, 403):
        return ModelAuthError(
            f"{what} was refused (HTTP {status}): {detail}; check the API key in ${api_key_env} "
            "(config model.api_key_env names the variable)",
            status=status,
        )
    retry_after = parse_retry_after(headers.get("retry-after"), now=now)
    if status == 429:
        wait = f"; the server asked to retry after {retry_after:g} s" if retry_after is not None else ""
        return ModelRateLimitError(
            f"{what} was rate limited (HTTP 429): {detail}{wait}", retry_after=retry_after
        )
    if status == 408:
        return ModelTimeoutError(f"{what}: the server timed out the request (HTTP 408): {detail}", status=408)
    if status >= 500:
        return ModelServerError(
            f"{what} failed on the server (HTTP {status}): {detail}", status=status, retry_after=retry_after
        )
    return ModelRequestError(f"{what} was rejected (HTTP {status}): {detail}", status=status)


def parse_json_object(text: str, *, what: str) -> JsonObject:
    """Parse a JSON object body, or raise `ModelResponseError` quoting the start of it."""
    try:
        data: JsonValue = json.loads(text)
    except ValueError as exc:
        raise ModelResponseError(f"{what} returned invalid JSON: {snippet(text)!r}") from exc
    if not isinstance(data, dict):
        raise ModelResponseError(f"{what} returned JSON that is not an object: {snippet(text)!r}")
    return data


async def read_capped(
    response: httpx.Response, *, limit: int, what: str, deadline: Deadline, truncate: bool = False
) -> str:
    """The body of a streamed `response`, read chunk by chunk and never past `limit` bytes.

    Each chunk is read under `deadline` (and touches it: leading keep-alive whitespace a
    server sends while it works keeps a silence deadline from firing).

    Raises:
        ModelResponseError: the body is larger than `limit` (unless `truncate`: then its
            first `limit` bytes are returned).
    """
    declared = response.headers.get("content-length", "")
    too_big = (
        f"{what} sent a reply body larger than {limit:,} bytes; it was not read. A chat reply is "
        "far smaller: check that the URL names a chat-completions endpoint"
    )
    if not truncate and declared.isdigit() and int(declared) > limit:
        raise ModelResponseError(too_big)
    chunks: list[bytes] = []
    size = 0
    source = response.aiter_bytes()
    while True:
        with deadline.scope():
            chunk = await anext(source, None)
        if chunk is None:
            break
        deadline.touch()
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if not truncate:
                raise ModelResponseError(too_big)
            break
    body = b"".join(chunks)[:limit]
    return body.decode(response.encoding or "utf-8", errors="replace")


class Endpoint:
    """One provider URL plus what every call to it needs: headers, key hint, clock.

    Args:
        http: The injected client (tests give it an `httpx.MockTransport`).
        url: The full URL requests are POSTed to.
        headers: Headers for every request (auth included).
        provider: Names the provider in error messages (e.g. `"OpenAI-compatible"`).
        api_key_env: The environment variable named in authentication errors.
        clock: Unix time, for `Retry-After` dates.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        *,
        headers: Mapping[str, str],
        provider: str,
        api_key_env: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.http = http
        self.url = url
        self.headers = {"content-type": "application/json", "accept": "application/json", **headers}
        self.what = f"{provider} POST {url}"
        self.api_key_env = api_key_env
        self.clock = clock

    def _request(self, body: JsonObject, *, stream: bool) -> httpx.Request:
        headers = dict(self.headers)
        if stream:
            headers["accept"] = "text/event-stream"
        # Serialized here, compactly and without ASCII escapes, so the bytes are ours.
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return self.http.build_request(
            "POST", self.url, content=content, headers=headers, timeout=NO_HTTPX_TIMEOUT
        )

    def _raise_for_status(self, response: httpx.Response, body: str) -> None:
        if response.is_success:
            return
        raise error_for_status(
            response.status_code,
            body=body,
            headers=response.headers,
            what=self.what,
            api_key_env=self.api_key_env,
            now=self.clock(),
        )

    async def post_json(self, body: JsonObject, deadline: Deadline) -> JsonObject:
        """POST `body`, read the whole reply (at most `MAX_BODY_BYTES`) within `deadline`, return
        it as a JSON object."""
        with deadline.scope():
            response = await self.http.send(self._request(body, stream=False), stream=True)
        deadline.touch()
        try:
            if not response.is_success:
                error = await read_capped(
                    response, limit=MAX_ERROR_BODY_BYTES, what=self.what, deadline=deadline, truncate=True
                )
                self._raise_for_status(response, error)
            text = await read_capped(response, limit=MAX_BODY_BYTES, what=self.what, deadline=deadline)
        finally:
            with anyio.move_on_after(5, shield=True):
                await response.aclose()
        return parse_json_object(text, what=self.what)

    @asynccontextmanager
    async def open_stream(self, body: JsonObject, deadline: Deadline) -> AsyncIterator[httpx.Response]:
        """POST `body` for a streamed reply; yields the response once its status is good."""
        with deadline.scope():
            response = await self.http.send(self._request(body, stream=True), stream=True)
        try:
            if not response.is_success:
                error = await read_capped(
                    response, limit=MAX_ERROR_BODY_BYTES, what=self.what, deadline=deadline, truncate=True
                )
                self._raise_for_status(response, error)
            deadline.touch()
            yield response
        finally:
            # Shielded so a cancelled caller still hands the connection back; bounded so a
            # wedged peer cannot hold the clean-up forever.
            with anyio.move_on_after(5, shield=True):
                await response.aclose()
