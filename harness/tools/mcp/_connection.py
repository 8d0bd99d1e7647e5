"""One MCP server, connected for the length of a session.

`connect` starts the server (a subprocess over stdio, or a streamable HTTP endpoint), runs
the protocol's `initialize`, and lists its tools — all within `startup_timeout_s`; a server
that cannot is a `ToolServerError` naming it, with the tail of its stderr. Closing the
context stops the subprocess (the SDK's transport does that, bounded).

After the start nothing a server does ends the session: a call that fails, hangs past
`timeout_s`, or finds the server gone becomes a tool error the model reads. A
`notifications/tools/list_changed` only marks the tool list stale; the session re-lists at
its next prompt rebuild (`relist`), so the cached prefix never changes mid-conversation.

With telemetry on, a call carries the W3C trace context of its `execute_tool` span in the
request's `params._meta` (`traceparent`), so an instrumented server's spans join keel's trace.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import TextIO, cast

import anyio
from mcp import types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, RequestParamsMeta
from opentelemetry import context as otel_context
from opentelemetry import propagate
from pydantic import JsonValue

from harness.config import McpServerConfig
from harness.errors import ConfigError, ToolServerError
from harness.telemetry import trace_context
from harness.tools.mcp._results import result_output
from harness.tools.registry import ToolOutput, error_json

__all__ = ["McpConnection", "connect"]

_STDERR_TAIL = 2000


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

    def __init__(
        self,
        config: McpServerConfig,
        session: ClientSession,
        stderr: TextIO | None,
        *,
        max_output_chars: int,
    ) -> None:
        self.config = config
        self.name = config.name
        self._session = session
        self._stderr = stderr
        self._max_chars = max_output_chars
        self.tools: tuple[types.Tool, ...] = ()
        self.stale = False
        """The server said its tool list changed; applied at the next prompt rebuild."""
        self.gone: str | None = None
        """Why the server can no longer be called (None while it can)."""

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

    async def list_tools(self) -> tuple[types.Tool, ...]:
        """Every tool the server offers (all pages), sorted by name: a stable order for the prefix."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
            page = await self._session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tuple(sorted(tools, key=lambda t: t.name))
        self.stale = False
        return self.tools

    async def relist(self) -> bool:
        """Re-list the tools if the server said they changed; True when they were re-listed."""
        if not self.stale or self.gone is not None:
            return False
        try:
            with anyio.fail_after(self.config.timeout_s):
                await self.list_tools()
        except Exception as exc:
            self.gone = f"listing its tools failed ({type(exc).__name__}: {exc})"
            return False
        return True

    async def on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.stale = True
        elif isinstance(message, Exception) and self.gone is None:
            self.gone = f"its connection failed ({type(message).__name__}: {message})"

    async def call(self, tool: str, arguments: dict[str, JsonValue]) -> ToolOutput:
        """Call `tool`; every failure (gone, timed out, refused) is a tool error for the model."""
        if self.gone is not None:
            return ToolOutput(error_json(self._gone_text()), True)
        result: types.CallToolResult | None = None
        try:
            trace = trace_context()
            with anyio.move_on_after(self.config.timeout_s), _ambient(trace):
                result = await self._session.call_tool(
                    tool, arguments, meta=cast(RequestParamsMeta, trace) if trace else None
                )
        except Exception as exc:
            if _closed(exc):
                self.gone = "it stopped (the connection closed)"
                return ToolOutput(error_json(self._gone_text()), True)
            return ToolOutput(
                error_json(f"MCP server {self.name!r} refused the call: {_describe(exc)}"), True
            )
        if result is None:
            return ToolOutput(
                error_json(
                    f"tool {tool!r} of MCP server {self.name!r} timed out after {self.config.timeout_s:g} s"
                ),
                True,
            )
        return result_output(result, max_chars=self._max_chars)

    def _gone_text(self) -> str:
        tail = self.stderr_tail()
        where = f"; its stderr ended with: {tail[-500:]}" if tail else ""
        return f"MCP server {self.name!r} is not available: {self.gone}{where}. Continue without its tools"


def _command_found(command: str) -> bool:
    return shutil.which(command) is not None or os.path.isfile(command)


def _closed(exc: Exception) -> bool:
    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, EOFError))


def _describe(exc: Exception) -> str:
    return exc.message if isinstance(exc, MCPError) else f"{type(exc).__name__}: {exc}"


def _env(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, var in config.env.items():
        if var not in environ:
            raise ConfigError(f"mcp server {config.name!r}: env {key} names ${var}, which is not set")
        out[key] = environ[var]
    return out


def _headers(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, var in config.headers.items():
        if var not in environ:
            raise ConfigError(f"mcp server {config.name!r}: header {key} names ${var}, which is not set")
        out[key] = environ[var]
    return out


async def _open_transport(
    stack: AsyncExitStack, config: McpServerConfig, environ: Mapping[str, str], stderr: TextIO | None
) -> tuple[object, object]:
    if config.command is not None:
        if not await anyio.to_thread.run_sync(_command_found, config.command):
            raise ToolServerError(
                f"MCP server {config.name!r}: command {config.command!r} was not found; install it or fix "
                "mcp.servers[].command"
            )
        params = StdioServerParameters(
            command=config.command, args=list(config.args), env=_env(config, environ), cwd=config.cwd
        )
        assert stderr is not None
        return await stack.enter_async_context(stdio_client(params, errlog=stderr))
    assert config.url is not None
    client = await stack.enter_async_context(create_mcp_http_client(headers=_headers(config, environ)))
    return await stack.enter_async_context(streamable_http_client(config.url, http_client=client))


@asynccontextmanager
async def connect(
    config: McpServerConfig, *, environ: Mapping[str, str], max_output_chars: int
) -> AsyncIterator[McpConnection]:
    """Start `config`'s server and list its tools; stop it when the block exits.

    Raises:
        ToolServerError: the server would not start, initialize or list its tools in time.
        ConfigError: a variable named by `env` or `headers` is not set.
    """
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as stderr_file:
        stderr = cast(TextIO, stderr_file) if config.command is not None else None
        started = False
        try:
            async with AsyncExitStack() as stack:
                connection = await _start(stack, config, environ, stderr, max_output_chars=max_output_chars)
                started = True
                yield connection
        except (ToolServerError, ConfigError):
            raise
        except Exception as exc:
            # A transport's background task may fail only as the stack unwinds (an HTTP
            # connect error): still a failure to start, reported as one.
            if started:
                raise
            raise _start_error(config, exc, stderr) from exc


async def _start(
    stack: AsyncExitStack,
    config: McpServerConfig,
    environ: Mapping[str, str],
    stderr: TextIO | None,
    *,
    max_output_chars: int,
) -> McpConnection:
    holder: list[McpConnection] = []

    async def on_message(message: IncomingMessage) -> None:
        if holder:
            await holder[0].on_message(message)

    # Entered outside the time bound: they own task groups that outlive it.
    read, write = await _open_transport(stack, config, environ, stderr)
    session = await stack.enter_async_context(
        ClientSession(read, write, message_handler=on_message)  # type: ignore[arg-type]  # the SDK's stream types
    )
    connection = McpConnection(config, session, stderr, max_output_chars=max_output_chars)
    holder.append(connection)
    with anyio.fail_after(config.startup_timeout_s):
        await session.initialize()
        await connection.list_tools()
    return connection


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
