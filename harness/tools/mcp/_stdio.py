"""The stdio transport: a server subprocess, newline-delimited JSON-RPC, read with caps.

keel reads the server's stdout itself, in bytes, so that nothing on it can hurt the session:

- a line that is not a JSON-RPC message (a stray `print`) is logged and skipped;
- a line longer than `max_bytes` is never held: its head names the request it answers, which
  gets an error at once ("the result was over N bytes"), and the rest of the line is read and
  dropped — for at most `timeout_s`; a line still going then (an endless one) stops the server,
  so no reader keeps burning CPU after the call has given up;
- the end of stdout closes the read stream, which fails every waiting call as "connection closed".

Closing the context stops the server: stdin is closed, then the process group gets SIGTERM and
SIGKILL, each wait bounded, inside a shielded scope.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["StdioLimits", "error_message", "stdio_transport"]

log = logging.getLogger(__name__)

_HEAD_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')
_GRACE_S = 2.0
_READ_CHUNK = 65536
OVERSIZE_CODE = -32099
"""The JSON-RPC error code keel gives a reply it refused to read (over the size cap)."""


@dataclass(frozen=True, slots=True)
class StdioLimits:
    """How much of a server's stdout one message may take."""

    max_bytes: int
    timeout_s: float
    """How long an over-long line is read and dropped before the server is stopped."""


def error_message(request_id: int | str, code: int, message: str) -> SessionMessage:
    """A JSON-RPC error for `request_id`, as if the server had sent it."""
    error = types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )
    return SessionMessage(error)


def _head_id(head: bytes) -> int | str | None:
    found = _HEAD_ID.search(head)
    if found is None:
        return None
    try:
        value: object = json.loads(found.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) else None


class _Lines:
    """Splits stdout into messages under the caps; what it cannot deliver it says why."""

    def __init__(self, name: str, limits: StdioLimits, send: MemoryObjectSendStream[SessionMessage]) -> None:
        self._name = name
        self._limits = limits
        self._send = send
        self._buffer = bytearray()
        self._dropping_since: float | None = None
        self.skipped = 0

    async def feed(self, chunk: bytes) -> None:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            await self._take(piece)
            if end < 0:
                return
            await self._line_ended()
            start = end + 1

    async def _take(self, piece: bytes) -> None:
        if self._dropping_since is not None:
            if anyio.current_time() - self._dropping_since > self._limits.timeout_s:
                raise _Endless(
                    f"it wrote a line over {self._limits.max_bytes:,} bytes that did not end within "
                    f"{self._limits.timeout_s:g} s"
                )
            return
        self._buffer += piece
        if len(self._buffer) > self._limits.max_bytes:
            request_id = _head_id(bytes(self._buffer[:512]))
            self._buffer.clear()
            self._dropping_since = anyio.current_time()
            log.warning(
                "MCP server %r sent a line over %d bytes; dropped", self._name, self._limits.max_bytes
            )
            if request_id is not None:
                note = f"its reply was over {self._limits.max_bytes:,} bytes (mcp.servers[].max_result_bytes); not read"
                await self._send.send(error_message(request_id, OVERSIZE_CODE, note))

    async def _line_ended(self) -> None:
        if self._dropping_since is not None:
            self._dropping_since = None
            return
        line = bytes(self._buffer).strip()
        self._buffer.clear()
        if not line:
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except (ValidationError, ValueError):
            self.skipped += 1
            if self.skipped <= 20:
                log.warning(
                    "MCP server %r wrote a line that is not JSON-RPC; skipped: %.200r", self._name, line
                )
            return
        await self._send.send(SessionMessage(message))


class _Endless(Exception):
    pass


async def _read(
    process: anyio.abc.Process,
    lines: _Lines,
    send: MemoryObjectSendStream[SessionMessage],
    on_failure: Callable[[str], None],
) -> None:
    assert process.stdout is not None
    try:
        async with send:
            while True:
                await lines.feed(await process.stdout.receive(_READ_CHUNK))
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        return
    except _Endless as exc:
        on_failure(f"it was stopped: {exc}")
        with anyio.CancelScope(shield=True):
            await _stop(process, grace_s=0)  # it is busy writing: it would not exit on its own


async def _write(process: anyio.abc.Process, receive: MemoryObjectReceiveStream[SessionMessage]) -> None:
    assert process.stdin is not None
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with receive:
            async for item in receive:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode())


async def _stop(process: anyio.abc.Process, *, grace_s: float = _GRACE_S) -> None:
    """Close stdin, give the server `grace_s` to exit, then stop its process group (bounded)."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(grace_s):
        # Polling, not wait(): on asyncio wait() also waits for the pipes' EOF.
        while process.returncode is None:  # noqa: ASYNC110  # no event to wait on
            await anyio.sleep(0.01)
    if process.returncode is None:
        with suppress(ProcessLookupError, PermissionError, OSError):
            await terminate_posix_process_tree(process, _GRACE_S)
    with (
        suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError),
        anyio.move_on_after(_GRACE_S),
    ):
        await process.aclose()  # the pipes and the process's transport


@asynccontextmanager
async def stdio_transport(
    argv: list[str],
    *,
    name: str,
    env: Mapping[str, str],
    cwd: Path | None,
    stderr: TextIO,
    limits: StdioLimits,
    on_failure: Callable[[str], None],
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage], MemoryObjectSendStream[SessionMessage]]]:
    """Start the server; yield (messages from it, messages to it); stop it on exit.

    `on_failure` hears why keel stopped the server itself (an endless line), before the
    read stream closes.

    Raises:
        OSError: the process could not be started.
    """
    process = await anyio.open_process(argv, env=dict(env), cwd=cwd, stderr=stderr, start_new_session=True)
    from_server, read = anyio.create_memory_object_stream[SessionMessage](0)
    write, to_server = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, process, _Lines(name, limits, from_server), from_server, on_failure)
            tg.start_soon(_write, process, to_server)
            try:
                yield read, write
            finally:
                with anyio.CancelScope(shield=True):
                    write.close()
                    await _stop(process)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)
