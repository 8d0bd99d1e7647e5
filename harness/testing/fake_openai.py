"""A fast fake OpenAI-compatible model endpoint, for tests and benchmarks of what is around a model.

    python -m harness.testing.fake_openai [--port 0] [--latency-ms 0] [--chunks 3]

It listens on 127.0.0.1 (a free port unless `--port`; printed as the first line of stdout,
`port N`) and answers `POST /v1/chat/completions`, streamed (with `stream_options.include_usage`)
or not, and `GET /v1/models`. The reply is `echo: <the last user message>` in `--chunks`
pieces, after `--latency-ms` (the "model time"); usage counts about four characters a token
and reports everything before the last message as cached (`prompt_tokens_details.cached_tokens`),
as a warm prefix cache would. A user message containing:

- `[fail]` gets HTTP 500 (a model endpoint that fails);
- `[sleep=S]` waits S seconds before the first token (a long turn to race or kill);
- `[tool]` gets a call of the tool `echo_tool` first, then the reply once its result is sent.

`GET /stats` returns `{"requests": N}`. It runs until terminated. Needs starlette and uvicorn.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
from collections.abc import AsyncIterator, Sequence

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["fake_app", "main"]

MODEL = "fake-model"
_SLEEP = re.compile(r"\[sleep=(\d+(?:\.\d+)?)\]")


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _usage(messages: Sequence[dict[str, object]], reply: str) -> dict[str, object]:
    sizes = [_tokens(_text(m.get("content")) + json.dumps(m.get("tool_calls") or "")) for m in messages]
    prompt = sum(sizes) + 4 * len(messages)
    cached = max(0, prompt - sizes[-1] - 4) if sizes else 0
    out = _tokens(reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": out,
        "total_tokens": prompt + out,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _pieces(text: str, n: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, n)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def fake_app(*, latency_s: float = 0.0, chunks: int = 3) -> Starlette:
    """The endpoint as an app (see the module docstring)."""
    served = {"requests": 0}

    async def completions(request: Request) -> Response:
        served["requests"] += 1
        body = json.loads(await request.body())
        messages: list[dict[str, object]] = body.get("messages") or []
        last_user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        if "[fail]" in last_user:
            return JSONResponse(
                {"error": {"message": "the fake model failed on purpose", "type": "server_error"}}, 500
            )
        sleep = _SLEEP.search(last_user)
        await anyio.sleep(latency_s + (float(sleep.group(1)) if sleep else 0.0))
        wants_tool = "[tool]" in last_user and not (messages and messages[-1].get("role") == "tool")
        reply = "" if wants_tool else f"echo: {last_user}"
        calls: list[dict[str, object]] | None = (
            [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "echo_tool", "arguments": '{"text": "hi"}'},
                }
            ]
            if wants_tool
            else None
        )
        usage = _usage(messages, reply)
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            message: dict[str, object] = {"role": "assistant", "content": reply or None}
            if calls:
                message["tool_calls"] = calls
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return JSONResponse(
                {
                    "id": "fake",
                    "object": "chat.completion",
                    "model": MODEL,
                    "choices": [choice],
                    "usage": usage,
                }
            )
        return StreamingResponse(_stream(reply, calls, usage, finish, chunks), media_type="text/event-stream")

    async def models(request: Request) -> Response:
        return JSONResponse(
            {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "fake"}]}
        )

    async def stats(request: Request) -> Response:
        return JSONResponse(served)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/stats", stats, methods=["GET"]),
        ]
    )


async def _stream(
    reply: str, calls: list[dict[str, object]] | None, usage: dict[str, object], finish: str, chunks: int
) -> AsyncIterator[bytes]:
    def data(delta: dict[str, object], reason: str | None) -> bytes:
        chunk = {
            "id": "fake",
            "object": "chat.completion.chunk",
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()

    yield data({"role": "assistant", "content": ""}, None)
    if calls:
        yield data({"tool_calls": [{"index": 0, **calls[0]}]}, None)
    else:
        for piece in _pieces(reply, chunks):
            yield data({"content": piece}, None)
    yield data({}, finish)
    tail = {"id": "fake", "object": "chat.completion.chunk", "model": MODEL, "choices": [], "usage": usage}
    yield f"data: {json.dumps(tail)}\n\ndata: [DONE]\n\n".encode()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="a fake OpenAI-compatible endpoint")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--chunks", type=int, default=3)
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    print(f"port {sock.getsockname()[1]}", flush=True)
    app = fake_app(latency_s=args.latency_ms / 1000, chunks=args.chunks)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
