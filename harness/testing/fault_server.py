"""An MCP server that breaks on purpose, one way per process: for the tests of keel's MCP client.

```sh
python -m harness.testing.fault_server MODE              # stdio
python -m harness.testing.fault_server MODE --http PORT  # streamable HTTP on 127.0.0.1:PORT/mcp
```

It speaks just enough of the protocol by hand (initialize, tools/list, tools/call, ping) to be
able to break it where an SDK server never would. It offers two tools: `echo` (answers its
`text`) and `act`, which does what MODE says:

- `die`: the process exits in the middle of the call;
- `mid_body`: the reply starts, then the process exits (stdio: half a line; HTTP: a body
  shorter than its Content-Length);
- `bad_chunk`: HTTP only, a chunked reply whose chunk size is not a number;
- `endless`: the reply is one line that never ends;
- `huge`: a 50 MB result in one reply;
- `stray`: stdio only, a line that is not JSON before every reply (`act` then answers normally);
- `relist`: `act` sends `notifications/tools/list_changed`; every later `tools/list` offers a
  tool whose input schema is not an object;
- `ok`: nothing breaks (a server to stop from outside, "down between turns").

And bad tool lists (stdio or HTTP):

- `shuffle`: ten more tools, listed in a different order at every `tools/list`; `act` sends
  `notifications/tools/list_changed` (stdio);
- `many`: 1,000 more tools;
- `bigschema`: one more tool whose input schema is about 150 KB;
- `dupe`: `echo` is advertised twice.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Literal, get_args

import anyio
import anyio.abc

__all__ = ["MODES", "Mode", "main"]

Mode = Literal[
    "die",
    "mid_body",
    "bad_chunk",
    "endless",
    "huge",
    "stray",
    "relist",
    "ok",
    "shuffle",
    "many",
    "bigschema",
    "dupe",
]
MODES: tuple[Mode, ...] = get_args(Mode)

_TOOLS: list[dict[str, object]] = [
    {
        "name": "echo",
        "description": "Answer with the text given.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "act",
        "description": "Do what this server was started to do.",
        "inputSchema": {"type": "object"},
    },
]
_BROKEN_TOOL: dict[str, object] = {
    "name": "broken",
    "description": "Its schema is a string.",
    "inputSchema": {"type": "string"},
}


class _Server:
    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.relisted = False
        self.lists = 0

    def listing(self) -> list[dict[str, object]]:
        """The tools this mode lists now."""
        self.lists += 1
        tools: list[dict[str, object]] = [*_TOOLS, _BROKEN_TOOL] if self.relisted else list(_TOOLS)
        if self.mode in ("shuffle", "many"):
            count = 10 if self.mode == "shuffle" else 1000
            tools += [
                {
                    "name": f"tool_{i:04d}",
                    "description": f"Tool number {i}.",
                    "inputSchema": {"type": "object"},
                }
                for i in range(count)
            ]
        if self.mode == "shuffle":
            turn = self.lists * 7 % len(tools)
            tools = tools[turn:][::-1] + tools[:turn]
        if self.mode == "bigschema":
            properties = {f"p{i}": {"type": "string", "description": "x" * 120} for i in range(1200)}
            tools.append(
                {
                    "name": "big",
                    "description": "A huge schema.",
                    "inputSchema": {"type": "object", "properties": properties},
                }
            )
        if self.mode == "dupe":
            tools.append(dict(_TOOLS[0]))
        return tools

    def result(self, message: dict[str, object]) -> dict[str, object] | None:
        """The result of a request (None: a notification, nothing to answer)."""
        method = message.get("method")
        if "id" not in message:
            return None
        if method == "initialize":
            params = message.get("params")
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            return {
                "protocolVersion": version or "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fault", "version": "1"},
            }
        if method == "tools/list":
            return {"tools": self.listing()}
        if method == "tools/call":
            params = message.get("params")
            arguments = params.get("arguments") if isinstance(params, dict) else None
            text = arguments.get("text") if isinstance(arguments, dict) else None
            return {"content": [{"type": "text", "text": str(text if text is not None else "acted")}]}
        return {}


def _reply(message_id: object, result: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}).encode()


_HEAD = b'{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "'


def _huge(message_id: object) -> bytes:
    return _HEAD % json.dumps(message_id).encode() + b"x" * 50_000_000 + b'"}]}}'


def _is_act(message: dict[str, object]) -> bool:
    params = message.get("params")
    return message.get("method") == "tools/call" and isinstance(params, dict) and params.get("name") == "act"


async def _stdio(server: _Server) -> None:
    out = sys.stdout.buffer
    async for raw in anyio.wrap_file(sys.stdin.buffer):
        message = json.loads(raw)
        result = server.result(message)
        if result is None:
            continue
        if server.mode == "stray":
            out.write(b"a stray line that is not JSON\n")
        if _is_act(message):
            await _stdio_act(server, message, out)
        out.write(_reply(message["id"], result) + b"\n")
        out.flush()


async def _stdio_act(server: _Server, message: dict[str, object], out: object) -> None:
    assert hasattr(out, "write") and hasattr(out, "flush")
    mode, message_id = server.mode, message["id"]
    if mode == "die":
        os._exit(3)
    if mode == "mid_body":
        out.write(_HEAD % json.dumps(message_id).encode() + b"half")
        out.flush()
        os._exit(3)
    if mode == "endless":
        out.write(_HEAD % json.dumps(message_id).encode())
        while True:
            out.write(b"y" * 65536)
    if mode == "huge":
        out.write(_huge(message_id) + b"\n")
        out.flush()
    if mode in ("relist", "shuffle"):
        server.relisted = mode == "relist"
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        out.write(json.dumps(note).encode() + b"\n")


async def _read_request(stream: anyio.abc.ByteStream) -> tuple[str, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    length = 0
    for line in lines[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == "content-length":
            length = int(value)
    while len(body) < length:
        body += await stream.receive()
    return lines[0].split(" ")[0], body


def _response(status: str, body: bytes = b"", *, extra: bytes = b"") -> bytes:
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n"
    return head.encode() + extra + f"content-length: {len(body)}\r\n\r\n".encode() + body


async def _http_act(server: _Server, stream: anyio.abc.ByteStream, message: dict[str, object]) -> bool:
    """Break the reply to `act` as the mode says; True when the reply was sent (or never will be)."""
    mode, message_id = server.mode, message["id"]
    chunked = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
    if mode == "die":
        os._exit(3)
    if mode == "mid_body":
        whole = _reply(message_id, {"content": [{"type": "text", "text": "z" * 1000}]})
        await stream.send(_response("200 OK", whole)[: -len(whole) // 2])
        os._exit(3)
    if mode == "bad_chunk":
        await stream.send(chunked + b"zz\r\nnot a chunk\r\n")
        return True
    if mode == "endless":
        await stream.send(chunked)
        start = _HEAD % json.dumps(message_id).encode()
        await stream.send(b"%x\r\n%s\r\n" % (len(start), start))
        block = b"y" * 65536
        while True:
            await stream.send(b"%x\r\n%s\r\n" % (len(block), block))
    if mode == "huge":
        await stream.send(_response("200 OK", _huge(message_id)))
        return True
    if mode == "relist":
        server.relisted = True  # the notification would go on the GET stream, which this server lacks
    return False


async def _http_one(server: _Server, stream: anyio.abc.ByteStream) -> None:
    async with stream:
        try:
            method, body = await _read_request(stream)
        except (anyio.EndOfStream, anyio.BrokenResourceError, ValueError):
            return
        if method != "POST":
            await stream.send(_response("405 Method Not Allowed"))
            return
        message = json.loads(body)
        result = server.result(message)
        if result is None:
            await stream.send(_response("202 Accepted"))
            return
        if _is_act(message) and await _http_act(server, stream, message):
            return
        await stream.send(_response("200 OK", _reply(message["id"], result)))


async def _http(server: _Server, port: int) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        try:
            await _http_one(server, stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return

    await listener.serve(handle)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="fault_server", description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args(argv)
    server = _Server(args.mode)
    if args.http is None:
        anyio.run(_stdio, server)
    else:
        anyio.run(_http, server, args.http)


if __name__ == "__main__":
    main()
