"""A real HTTP server on 127.0.0.1 that misbehaves on cue, for testing the model clients.

Each incoming POST takes the next action from the script:

- `Reply(status, body, headers)` — an ordinary response (also garbage bodies, 429s, 500s);
- `Drip(chunks, interval_s)` — headers at once, then the body a chunk at a time, slowly;
- `Drop(head, partial)` — close the socket: before any response, or after sending headers
  that promise more body than is ever sent.

The server runs in a daemon thread (`with FaultServer([...]) as server:`), records every
request it received (`requests`), and answers 500 "script exhausted" when it runs out.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TypeAlias

from pydantic import JsonValue

__all__ = ["Action", "Drip", "Drop", "FaultServer", "Received", "Reply", "json_reply", "sse_reply"]


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass(frozen=True)
class Drip:
    chunks: tuple[bytes, ...]
    interval_s: float = 0.0
    """Wait before each chunk (unless `delays` gives one wait per chunk)."""
    delays: tuple[float, ...] | None = None
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Drop:
    head: bool = False
    """Send the status line and headers (promising more body) before closing."""
    partial: bytes = b""
    """Body bytes sent before closing (only with `head`)."""
    content_type: str = "application/json"


Action: TypeAlias = Reply | Drip | Drop


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: JsonValue


def json_reply(data: JsonValue, *, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(status=status, body=json.dumps(data).encode(), headers=dict(headers or {}))


def sse_reply(events: Iterable[str], *, status: int = 200) -> Reply:
    """A complete text/event-stream body from pre-formatted event blocks (without the blank line)."""
    body = "".join(f"{e}\n\n" for e in events).encode()
    return Reply(status=status, body=body, content_type="text/event-stream")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body: JsonValue = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.server.owner.record(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        action = self.server.owner.next_action()
        # The client may give up mid-reply (e.g. its timeout fired); nothing left to do then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._perform(action)

    def _start(self, status: int, content_type: str, length: int, headers: Mapping[str, str] = {}) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(length))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _perform(self, action: Action) -> None:
        if isinstance(action, Reply):
            self._start(action.status, action.content_type, len(action.body), action.headers)
            self.wfile.write(action.body)
            self.wfile.flush()
        elif isinstance(action, Drip):
            self._start(action.status, action.content_type, sum(len(c) for c in action.chunks))
            self.wfile.flush()
            delays = action.delays or (action.interval_s,) * len(action.chunks)
            for chunk, delay in zip(action.chunks, delays, strict=True):
                if self.server.owner.stopping.wait(delay):
                    break
                self.wfile.write(chunk)
                self.wfile.flush()
        else:
            if action.head:
                self._start(200, action.content_type, len(action.partial) + 10_000)
                self.wfile.write(action.partial)
                self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: FaultServer


class FaultServer:
    """A scripted loopback HTTP server (a context manager; started on enter)."""

    def __init__(self, script: Iterable[Action] = ()) -> None:
        self._script: deque[Action] = deque(script)
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self.stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use the server inside `with`"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *actions: Action) -> None:
        with self._lock:
            self._script.extend(actions)

    def record(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)

    def next_action(self) -> Action:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return json_reply({"error": {"message": "fault server script exhausted"}}, status=500)

    def __enter__(self) -> FaultServer:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fault-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
