"""One MCP server, connected for the length of a session.

`connect` starts the server (a subprocess over stdio, `_stdio.py`, or a streamable HTTP
endpoint through the guarded seam of `_http.py`), agrees a protocol version, and lists
its tools — all within `startup_timeout_s`; a server that cannot is a `ToolServerError` naming
it, with the tail of its stderr. Closing the context stops the subprocess (bounded).

After the start nothing a server does ends the session. The transport and the SDK's session
live in a *host* task of their own: whatever fails in there, at any point of a call or between
turns, ends only that task, marks the server gone and wakes the calls in flight. A call that
fails, hangs past `timeout_s`, sends a reply over `max_result_bytes`, or finds the server gone
becomes a tool error naming the server.

The protocol: the SDK's `Client` (`mode="auto"`) sends `server/discover` at 2026-07-28 (the
stateless revision: no handshake, no session id) and falls back to the `initialize` handshake
(2024-11-05 … 2025-11-25) for a server that does not answer it as a current one.

A `notifications/tools/list_changed` (on a 2026-07-28 server that offers it, an event of the
`subscriptions/listen` stream the host follows), or the list's `ttlMs` running out, only marks
the tool list stale; the session re-lists at its next prompt rebuild (`relist`), so the cached prefix
never changes mid-conversation; a re-list that fails or is invalid keeps the old list.

With telemetry on, a call carries the W3C trace context of its `execute_tool` span in the
request's `params._meta` (`traceparent`), so an instrumented server's spans join keel's trace.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, contextmanager
from typing import Literal, TextIO, TypeVar, cast

import anyio
import anyio.abc
import httpx2
from mcp import Client, types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged, listen
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, RequestParamsMeta
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import context as otel_context
from opentelemetry import propagate
from pydantic import JsonValue

from harness.config import McpServerConfig
from harness.errors import ConfigError, ToolServerError
from harness.telemetry import trace_context
from harness.tools.mcp._http import GuardedTransport, HttpLimits
from harness.tools.mcp._results import result_output
from harness.tools.mcp._stdio import StdioLimits, stdio_transport
from harness.tools.registry import ToolOutput, error_json

__all__ = ["McpConnection", "connect"]

_STDERR_TAIL = 2000

log = logging.getLogger(__name__)

_T = TypeVar("_T")


@contextmanager
def _ambient(trace: Mapping[str, str]) -> Iterator[None]:
    """keel's span as the ambient OpenTelemetry context during a call (nothing when untraced).

    The MCP SDK records a client span of its own when the host process installed a global
    tracer provider, and writes *its* trace context into `_meta`; as a child of keel's span
    it keeps the server in keel's trace. (The SDK already loads the OpenTelemetry API.)"""
    if not trace:
        yield
        return
    token = otel_context.attach(propagate.extract(trace))
    try:
        yield
    finally:
        otel_context.detach(token)


class McpConnection:
    """A connected server: its tools, and calls to them that never raise."""

    def __init__(self, config: McpServerConfig, stderr: TextIO | None, *, max_output_chars: int) -> None:
        self.config = config
        self.name = config.name
        self._session: ClientSession | None = None
        self._stderr = stderr
        self._max_chars = max_output_chars
        self._in_flight: set[anyio.CancelScope] = set()
        self._stop = anyio.Event()
        self.tools: tuple[types.Tool, ...] = ()
        self.stale = False
        """The server said its tool list changed; applied at the next prompt rebuild."""
        self.gone: str | None = None
        """Why the server can no longer be called (None while it can)."""
        self.relist_error: str | None = None
        """Why the last re-list failed (None when it did not)."""
        self.start_error: Exception | None = None
        """Why the server did not start (`connect` raises it)."""
        self._expires: float | None = None
        """When the list's `ttlMs` runs out (None: the server gave none; wait for list_changed)."""

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr ("" for none, or an HTTP server)."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            return self._stderr.read().strip()
        except (OSError, ValueError):
            return ""

    def fail(self, why: str, *, quiet: bool = False) -> None:
        """The server cannot be called any more: say why, and wake every call waiting on it."""
        if self.gone is None:
            self.gone = why
            if not quiet:
                log.warning("MCP server %r is not available: %s", self.name, why)
        for scope in list(self._in_flight):
            scope.cancel()

    async def serve(
        self,
        environ: Mapping[str, str],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The host task: open the transport and the SDK session, start, then wait for `close`.

        It never raises: a failure to start is kept in `start_error` (and `started()` still
        called) for `connect` to raise outside the task group; one after the start ends only
        this task and marks the server gone."""
        started = False
        # The start (transport, negotiation, list, stream) has `startup_timeout_s`; the limit is
        # lifted once started, the connection staying open inside it.
        limit = anyio.CancelScope(deadline=anyio.current_time() + self.config.startup_timeout_s)
        try:
            with limit:
                async with AsyncExitStack() as stack:
                    self._session = await _open_session(stack, self, environ)
                    await self.list_tools()
                    async with anyio.create_task_group() as tg:
                        if _offers_listen(self._session):
                            await tg.start(self._listen, self._session)
                        limit.deadline = math.inf
                        started = True
                        task_status.started()
                        await self._stop.wait()
                        tg.cancel_scope.cancel()
            if not started:
                raise TimeoutError
        except Exception as exc:
            if not started:
                known = isinstance(exc, (ToolServerError, ConfigError))
                self.start_error = exc if known else _start_error(self.config, exc, self._stderr)
                self.start_error.__cause__ = None if known else exc
                task_status.started()
            else:
                self.fail(f"its connection failed ({_describe(exc)})")
        finally:
            self.fail("it was closed", quiet=True)

    async def _listen(
        self, session: ClientSession, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow the server's `subscriptions/listen` stream: a tools change marks the list stale.

        Started once the server acknowledged the stream (there is no replay: a change before
        that would be missed); a stream that fails is logged, and `ttlMs` still applies."""
        acknowledged = False
        try:
            async with listen(session, tools_list_changed=True) as subscription:
                acknowledged = True
                task_status.started()
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self.stale = True
        except Exception as exc:
            log.info("MCP server %r: its list-change stream ended (%s)", self.name, _describe(exc))
        if not acknowledged:
            task_status.started()

    def close(self) -> None:
        """Ask the host task to stop the server."""
        self._stop.set()

    async def list_tools(self) -> tuple[types.Tool, ...]:
        """Every tool the server offers (all pages), sorted by name: a stable order for the prefix."""
        assert self._session is not None
        tools: list[types.Tool] = []
        cursor: str | None = None
        ttls: list[int] = []
        while True:
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
            page = await self._session.list_tools(params=params)
            tools.extend(page.tools)
            if "ttl_ms" in page.model_fields_set:  # a 2026-07-28 server says how long it holds
                ttls.append(page.ttl_ms)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tuple(sorted(tools, key=lambda t: t.name))
        self.stale = False
        self._expires = anyio.current_time() + min(ttls) / 1000 if ttls else None
        return self.tools

    def _due(self) -> bool:
        """The server said its list changed, or the list's `ttlMs` has run out."""
        return self.stale or (self._expires is not None and anyio.current_time() >= self._expires)

    async def relist(self) -> bool:
        """Re-list the tools if the server said they changed or their `ttlMs` ran out; True
        when they were re-listed (the registry applies the list only if it differs).

        A re-list that fails keeps the previous list; `relist_error` says why."""
        self.relist_error = None
        if not self._due() or self.gone is not None:
            return False
        previous = self.tools
        try:
            with anyio.fail_after(self.config.timeout_s):
                await self._guarded(self.list_tools())
        except Exception as exc:
            self.relist_error = f"re-listing its tools failed ({_describe(exc)})"
            log.warning("MCP server %r: %s; the old list is kept", self.name, self.relist_error)
            self.tools = previous
            return False
        return self.gone is None

    async def _guarded(self, work: Awaitable[_T]) -> _T:
        """Await `work` unless the server goes while it waits (then `ConnectionError`)."""
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            try:
                return await work
            finally:
                self._in_flight.discard(scope)
        raise ConnectionError(self.gone or "the server went away")

    async def on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.stale = True
        elif isinstance(message, Exception):
            log.warning(
                "MCP server %r: a message could not be read (%s); skipped", self.name, _describe(message)
            )

    async def call(self, tool: str, arguments: dict[str, JsonValue]) -> ToolOutput:
        """Call `tool`; every failure (gone, timed out, refused, broken off) is a tool error for the model."""
        if self.gone is not None or self._session is None:
            return ToolOutput(error_json(self._gone_text()), True)
        session = self._session
        result: types.CallToolResult | None = None
        try:
            trace = trace_context()
            with anyio.move_on_after(self.config.timeout_s), _ambient(trace):
                result = await self._guarded(
                    session.call_tool(tool, arguments, meta=cast(RequestParamsMeta, trace) if trace else None)
                )
        except Exception as exc:
            if self.unavailable():
                return ToolOutput(error_json(self._gone_text()), True)
            if _closed(exc):
                self.fail("it stopped (the connection closed)")
                return ToolOutput(error_json(self._gone_text()), True)
            return ToolOutput(
                error_json(f"tool {tool!r} of MCP server {self.name!r} failed: {_describe(exc)}"), True
            )
        if self.unavailable():  # it went while the call waited (even as the timeout fired)
            return ToolOutput(error_json(self._gone_text()), True)
        if result is None:
            return ToolOutput(
                error_json(
                    f"tool {tool!r} of MCP server {self.name!r} timed out after {self.config.timeout_s:g} s"
                ),
                True,
            )
        return result_output(result, max_chars=self._max_chars)

    @property
    def protocol_version(self) -> str | None:
        """The protocol version agreed with the server (None before the start)."""
        return None if self._session is None else self._session.protocol_version

    def unavailable(self) -> bool:
        """True once the server is gone (it may go while a call waits)."""
        return self.gone is not None

    def _gone_text(self) -> str:
        tail = self.stderr_tail()
        where = f"; its stderr ended with: {tail[-500:]}" if tail else ""
        return f"MCP server {self.name!r} is not available: {self.gone}{where}. Continue without its tools"


def _offers_listen(session: ClientSession) -> bool:
    """A 2026-07-28 server whose tools say `listChanged`: it has a subscription stream for them."""
    caps = session.server_capabilities
    modern = session.protocol_version in MODERN_PROTOCOL_VERSIONS
    return modern and caps is not None and caps.tools is not None and bool(caps.tools.list_changed)


def _command_found(command: str) -> bool:
    return shutil.which(command) is not None or os.path.isfile(command)


def _closed(exc: Exception) -> bool:
    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, EOFError))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in _leaves(exc)[:3])
    text = " ".join(str(exc).split())  # a validation error spans lines
    return f"{type(exc).__name__}: {text[:300]}"


def _from_environ(
    config: McpServerConfig,
    what: Literal["env", "header"],
    names: Mapping[str, str],
    environ: Mapping[str, str],
) -> dict[str, str]:
    """`names` (key → the variable holding its value) with each value read from `environ`."""
    out: dict[str, str] = {}
    for key, var in names.items():
        if var not in environ:
            raise ConfigError(f"mcp server {config.name!r}: {what} {key} names ${var}, which is not set")
        out[key] = environ[var]
    return out


def _env(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    return _from_environ(config, "env", config.env, environ)


def _headers(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    return _from_environ(config, "header", config.headers, environ)


async def _open_session(
    stack: AsyncExitStack, connection: McpConnection, environ: Mapping[str, str]
) -> ClientSession:
    """The transport (stdio or HTTP) and the SDK session over it, entered on `stack`."""
    config = connection.config
    if config.command is not None:
        if not await anyio.to_thread.run_sync(_command_found, config.command):
            raise ToolServerError(
                f"MCP server {config.name!r}: command {config.command!r} was not found; install it or fix "
                "mcp.servers[].command"
            )
        assert connection._stderr is not None
        transport: AbstractAsyncContextManager[object] = stdio_transport(
            [config.command, *config.args],
            name=config.name,
            env=get_default_environment() | _env(config, environ),
            cwd=config.cwd,
            stderr=connection._stderr,
            limits=StdioLimits(max_bytes=config.max_result_bytes, timeout_s=config.timeout_s),
            on_failure=connection.fail,
        )
    else:
        assert config.url is not None
        limits = HttpLimits(config.max_result_bytes, config.max_result_lines, config.timeout_s)
        guarded = GuardedTransport(httpx2.AsyncHTTPTransport(), server=config.name, limits=limits)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=_headers(config, environ),
                timeout=httpx2.Timeout(30.0, read=300.0),
                transport=guarded,
            )
        )
        transport = streamable_http_client(config.url, http_client=http)
    # The SDK's client enters the transport, then negotiates the protocol version (`mode="auto"`).
    client = Client(
        transport,  # type: ignore[arg-type]  # a Transport: an async context manager of the two streams
        mode="auto",
        message_handler=connection.on_message,
        cache=None,
    )
    await stack.enter_async_context(client)
    return client.session


@asynccontextmanager
async def connect(
    config: McpServerConfig, *, environ: Mapping[str, str], max_output_chars: int
) -> AsyncIterator[McpConnection]:
    """Start `config`'s server and list its tools; stop it when the block exits.

    Raises:
        ToolServerError: the server would not start, agree a protocol or list its tools in time.
        ConfigError: a variable named by `env` or `headers` is not set.
    """
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as stderr_file:
        stderr = cast(TextIO, stderr_file) if config.command is not None else None
        connection = McpConnection(config, stderr, max_output_chars=max_output_chars)
        async with anyio.create_task_group() as tg:
            await tg.start(connection.serve, environ)
            if connection.start_error is not None:
                raise connection.start_error
            try:
                yield connection
            finally:
                connection.close()


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


def _start_error(config: McpServerConfig, exc: BaseException, stderr: TextIO | None) -> ToolServerError:
    if isinstance(exc, TimeoutError):
        what = f"it did not start and list its tools within {config.startup_timeout_s:g} s"
    elif isinstance(exc, BaseExceptionGroup):
        what = "; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc)[:3])
    else:
        what = f"{type(exc).__name__}: {exc}"
    where = config.url or " ".join([config.command or "", *config.args])
    tail = ""
    if stderr is not None:
        try:
            stderr.flush()
            stderr.seek(0)
            tail = stderr.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            tail = ""
    message = f"MCP server {config.name!r} ({where}) failed to start: {what}"
    if tail:
        message += f"\n--- its stderr (last lines) ---\n{tail}"
    return ToolServerError(message)
