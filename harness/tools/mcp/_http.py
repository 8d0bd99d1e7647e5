"""The HTTP seam under the SDK's streamable-HTTP client: no transport error escapes, no body
is unbounded.

The SDK posts each JSON-RPC request and reads its reply from the response body (JSON, or an
SSE stream). `GuardedTransport` sits between it and the network and answers for the server
when the server cannot:

- a request that fails (refused connection, server down between turns, reset) gets a
  JSON-RPC error reply naming the failure, so the call that sent it ends as a tool error;
- a JSON body is read here, under `max_bytes` and the call's timeout; one that breaks
  mid-body (a dead server, a malformed chunk), runs over the cap or past the timeout is
  replaced by such an error reply;
- an SSE body is passed through as it streams, counting bytes and lines; past a cap, past the
  timeout or at a transport error it ends with a synthetic error event for the request;
- the standalone GET stream (server notifications) just ends on an error; DELETE and
  notifications get an empty answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import httpx2

__all__ = ["GuardedTransport", "HttpLimits"]

log = logging.getLogger(__name__)

TRANSPORT_CODE = -32098
"""The JSON-RPC error code keel gives a request whose HTTP exchange failed."""


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What one reply may take: bytes, lines, and time to read it."""

    max_bytes: int
    max_lines: int
    timeout_s: float


def _request_id(request: httpx2.Request) -> int | str | None:
    """The JSON-RPC id a POST carries (None for a notification, a reply, or another method)."""
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    if not isinstance(body, dict) or "method" not in body:
        return None
    rid = body.get("id")
    return rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) else None


def _error_body(request_id: int | str, message: str) -> bytes:
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": TRANSPORT_CODE, "message": message}}
    return json.dumps(error).encode()


def _body(response: httpx2.Response) -> httpx2.AsyncByteStream:
    """The body of a response from the inner (async) transport, which is always an async stream."""
    stream = response.stream
    if not isinstance(stream, httpx2.AsyncByteStream):
        raise TypeError(f"an async transport answered with a {type(stream).__name__}")
    return stream


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Over(Exception):
    pass


class _Meter:
    def __init__(self, limits: HttpLimits) -> None:
        self._limits = limits
        self.size = 0
        self.lines = 0

    def count(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self.lines += chunk.count(b"\n")
        if self.size > self._limits.max_bytes:
            raise _Over(
                f"its reply was over {self._limits.max_bytes:,} bytes (mcp.servers[].max_result_bytes)"
            )
        if self.lines > self._limits.max_lines:
            raise _Over(
                f"its reply was over {self._limits.max_lines:,} lines (mcp.servers[].max_result_lines)"
            )


class _SseBody(httpx2.AsyncByteStream):
    """An SSE reply passed through under the caps; a failure ends it with an error event."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, request_id: int | str, limits: HttpLimits, server: str
    ) -> None:
        self._inner = inner
        self._id = request_id
        self._limits = limits
        self._server = server

    async def __aiter__(self) -> AsyncIterator[bytes]:
        meter = _Meter(self._limits)
        deadline = anyio.current_time() + self._limits.timeout_s
        chunks = self._inner.__aiter__()
        failure: str | None = None
        while failure is None:
            chunk: bytes | None = None
            try:
                with anyio.move_on_after(deadline - anyio.current_time()):
                    chunk = await chunks.__anext__()
                if chunk is None:
                    failure = f"its reply did not end within {self._limits.timeout_s:g} s"
                    break
                meter.count(chunk)
            except StopAsyncIteration:
                return
            except _Over as exc:
                failure = str(exc)
                break
            except (httpx2.TransportError, httpx2.StreamError, OSError) as exc:
                failure = f"its reply broke off ({_describe(exc)})"
                break
            yield chunk
        log.warning("MCP server %r: %s", self._server, failure)
        yield b"\n\nevent: message\ndata: " + _error_body(self._id, failure) + b"\n\n"

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            await self._inner.aclose()


class _QuietBody(httpx2.AsyncByteStream):
    """The standalone GET stream: a transport error ends it instead of raising."""

    def __init__(self, inner: httpx2.AsyncByteStream, server: str) -> None:
        self._inner = inner
        self._server = server

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except (httpx2.TransportError, httpx2.StreamError, OSError) as exc:
            log.info("MCP server %r: its notification stream ended (%s)", self._server, _describe(exc))

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            await self._inner.aclose()


class GuardedTransport(httpx2.AsyncBaseTransport):
    """Wraps the real transport (see the module docstring)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, *, server: str, limits: HttpLimits) -> None:
        self._inner = inner
        self._server = server
        self._limits = limits

    def _answer(self, request: httpx2.Request, request_id: int | str | None, failure: str) -> httpx2.Response:
        log.warning("MCP server %r: %s", self._server, failure)
        if request_id is None:
            # Nothing waits for a reply: a GET stream that cannot open is one the server lacks.
            return httpx2.Response(405 if request.method == "GET" else 202, request=request)
        return httpx2.Response(
            200,
            headers={"content-type": "application/json"},
            content=_error_body(request_id, failure),
            request=request,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request_id = _request_id(request)
        try:
            response = await self._inner.handle_async_request(request)
        except (httpx2.TransportError, OSError) as exc:
            return self._answer(request, request_id, f"the request failed ({_describe(exc)})")
        kind = response.headers.get("content-type", "").lower()
        if request_id is not None and kind.startswith("text/event-stream"):
            body = _SseBody(_body(response), request_id, self._limits, self._server)
            return httpx2.Response(
                response.status_code, headers=response.headers, stream=body, request=request
            )
        if request_id is None:
            quiet = _QuietBody(_body(response), self._server)
            return httpx2.Response(
                response.status_code, headers=response.headers, stream=quiet, request=request
            )
        return await self._read_whole(request, request_id, response)

    async def _read_whole(
        self, request: httpx2.Request, request_id: int | str, response: httpx2.Response
    ) -> httpx2.Response:
        """A JSON (or any non-SSE) reply, read here under the caps and the timeout."""
        meter = _Meter(self._limits)
        parts: list[bytes] = []
        failure: str | None = None
        try:
            with anyio.fail_after(self._limits.timeout_s):
                async for chunk in _body(response):
                    meter.count(chunk)
                    parts.append(chunk)
        except TimeoutError:
            failure = f"its reply did not end within {self._limits.timeout_s:g} s"
        except _Over as exc:
            failure = str(exc)
        except (httpx2.TransportError, httpx2.StreamError, OSError) as exc:
            failure = f"its reply broke off ({_describe(exc)})"
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await response.aclose()
        if failure is not None:
            return self._answer(request, request_id, failure)
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "transfer-encoding"]
        return httpx2.Response(
            response.status_code, headers=headers, content=b"".join(parts), request=request
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
