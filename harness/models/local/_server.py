"""The embedded model's HTTP face: a small OpenAI-compatible server (starlette).

Routes: `GET /v1/models`, `POST /v1/chat/completions` (streamed or not, with tools), and
`GET /health`. One generation runs at a time, in a worker thread, under the engine's lock;
a request that arrives meanwhile waits its turn. When a client goes away generation stops
at the next prefill chunk or token instead of running on and holding up everyone else.

The server never falls silent while it works, so a client may time out on silence alone:
a streamed reply carries prefill progress as SSE comments (`: keel-progress {"done": N,
"total": M}`, one per prefill chunk) and a `: keel-alive` comment while a tool call is
being written and held back; an unstreamed reply sends its headers at once and a space
(JSON's leading whitespace) for each prefill chunk and every `KEEPALIVE_PIECES` pieces.

Hardening (the server listens on loopback, where every local process can reach it):
- every request carries `Authorization: Bearer <token>`, a secret made per process by
  `start_local_model` and handed to the child in its environment; anything else is a 401;
- a body larger than `ServerLimits.max_body` is refused with a 413 before it is read
  (Content-Length) or as soon as the stream passes the cap (chunked), never parsed;
- at most `ServerLimits.max_queue` chat requests wait or run at once; one more is a 503
  with Retry-After, not an unbounded queue;
- a body that is not JSON, or nests deeper than `MAX_DEPTH`, is a 400 that says so; any
  other failure is a 500 with a one-line message (the traceback goes to the server's log,
  never to the client);
- `cached_tokens` count only tokens reused from this request's own scope (its `user`
  field): the prefix cache never resumes a request from another scope's state (`_prefix`),
  so neither the count nor the timing can reveal another caller's prompt.

Replies follow the chat-completions shapes: tool calls read from the model's native output
(`_reply.parse_reply`) become `message.tool_calls` (or `delta.tool_calls` chunks after
the text when streamed), and `usage.prompt_tokens_details.cached_tokens` carries the prompt
tokens reused from the previous request, with llama.cpp-style `timings` beside it
(`prompt_n`, `cache_n`, `prompt_ms`, `predicted_n`, `predicted_ms`).
"""

from __future__ import annotations

import hmac
import json
import math
import sys
import threading
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.from_thread
import anyio.to_thread
from pydantic import JsonValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.modelfiles import TOOL_CALL_OPEN
from harness.models._stream import PROGRESS_COMMENT
from harness.models.local._engine import Engine, Generation, Prepared, Progress, RequestError
from harness.models.local._reply import ParsedCall, parse_reply

__all__ = ["MAX_DEPTH", "ServerLimits", "build_app", "hold_back"]

JsonDict = dict[str, JsonValue]
Handler = Callable[[Request], Awaitable[Response]]
MAX_DEPTH = 64
"""The deepest JSON nesting a request may have (a chat request needs about 8)."""
KEEPALIVE_PIECES = 16
"""Generated pieces that may pass without anything sent before a keep-alive goes out."""


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """What one server accepts: body size in bytes, and chat requests waiting or running."""

    max_body: int = 16 * 1024 * 1024
    max_queue: int = 8


def _depth_ok(value: object) -> bool:
    """Whether `value` nests at most `MAX_DEPTH` deep (iterative: no recursion to exhaust)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children)
    return True


class _TooLarge(Exception):
    pass


async def _read_body(request: Request, cap: int) -> bytes:
    """The body, refused (`_TooLarge`) as soon as it is known to pass `cap` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > cap):
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


def hold_back(text: str) -> int:
    """How much of the text generated so far can be streamed as prose now.

    Everything before a tool-call tag (or before a trailing fragment that could grow into
    one) is prose; a reply that opens with `{` or a code fence may be a bare JSON tool call,
    so it is held until the end.
    """
    head = text.lstrip()
    if not head or head.startswith(("{", "```")) or "```".startswith(head):
        return 0
    at = text.find(TOOL_CALL_OPEN)
    if at >= 0:
        return at
    for k in range(min(len(TOOL_CALL_OPEN) - 1, len(text)), 0, -1):
        if text.endswith(TOOL_CALL_OPEN[:k]):
            return len(text) - k
    return len(text)


@dataclass(frozen=True, slots=True)
class _Outcome:
    content: str
    calls: tuple[ParsedCall, ...]
    finish: str


def _outcome(req: Prepared, gen: Generation) -> _Outcome:
    text = req.forced_prefix + gen.text + (req.forced_suffix if gen.finish == "stop" else "")
    parsed = parse_reply(text, req.tool_names)
    if req.mode == "none":
        return _Outcome(parsed.content, (), _finish(gen, False))
    calls = parsed.calls
    if req.mode == "forced" and not calls:
        calls = (ParsedCall("invalid_tool_call", gen.text, "the forced tool call produced no call"),)
    return _Outcome(parsed.content, calls, _finish(gen, bool(calls)))


def _finish(gen: Generation, calls: bool) -> str:
    if gen.finish == "length":
        return "length"
    return "tool_calls" if calls else "stop"


def _usage(gen: Generation) -> tuple[JsonDict, JsonDict]:
    usage: JsonDict = {
        "prompt_tokens": gen.prompt_tokens,
        "completion_tokens": gen.completion_tokens,
        "total_tokens": gen.prompt_tokens + gen.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": gen.cached_tokens},
    }
    timings: JsonDict = {
        "cache_n": gen.cached_tokens,
        "prompt_n": gen.prompt_tokens - gen.cached_tokens,
        "prompt_ms": round(gen.prompt_ms, 3),
        "predicted_n": gen.completion_tokens,
        "predicted_ms": round(gen.predicted_ms, 3),
    }
    return usage, timings


def _wire_calls(calls: tuple[ParsedCall, ...], *, stream: bool) -> list[JsonValue]:
    out: list[JsonValue] = []
    for i, c in enumerate(calls):
        item: JsonDict = {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        if stream:
            item["index"] = i
        out.append(item)
    return out


async def _run(
    engine: Engine,
    req: Prepared,
    cancelled: threading.Event,
    on_text: Callable[[str], None],
    progress: Progress,
) -> Generation:
    def work() -> Generation:
        with engine.lock:
            if cancelled.is_set():
                raise anyio.get_cancelled_exc_class()()
            gen = engine.generate(req, on_text, cancelled, progress)
        # One log line per request, worded like llama.cpp's own, so log readers keep working.
        print(
            f"request ({req.mode}{', a call by the hint' if gen.hinted else ''}): {gen.prompt_tokens} prompt tokens, {gen.cached_tokens} prefix-match hit, "
            f"remaining {gen.prompt_tokens - gen.cached_tokens} prompt tokens to eval "
            f"({gen.prompt_ms:.0f} ms); {gen.completion_tokens} generated ({gen.predicted_ms:.0f} ms), {gen.finish}",
            file=sys.stderr,
            flush=True,
        )
        return gen

    return await anyio.to_thread.run_sync(work)


def _completion(engine: Engine, req: Prepared, gen: Generation) -> JsonDict:
    out = _outcome(req, gen)
    usage, timings = _usage(gen)
    message: JsonDict = {"role": "assistant", "content": out.content}
    if out.calls:
        message["tool_calls"] = _wire_calls(out.calls, stream=False)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": engine.name,
        "choices": [{"index": 0, "message": message, "finish_reason": out.finish}],
        "usage": usage,
        "timings": timings,
    }


def _chunk(engine: Engine, cid: str, delta: JsonDict, finish: str | None = None) -> str:
    body = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": engine.name,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


def _progress_line(done: int, total: int) -> str:
    """An SSE comment: clients ignore it, keel's reads it as prefill progress (`PROGRESS_COMMENT`)."""
    return f"{PROGRESS_COMMENT}{json.dumps({'done': done, 'total': total})}\n\n"


async def _generation(
    engine: Engine, req: Prepared, cancelled: threading.Event, result: list[Generation]
) -> AsyncIterator[str | tuple[int, int]]:
    """Runs one generation; yields its text pieces and its prefill progress `(done, total)`."""
    send, receive = anyio.create_memory_object_stream[str | tuple[int, int]](math.inf)

    def on_text(piece: str) -> None:
        anyio.from_thread.run_sync(send.send_nowait, piece)

    def progress(done: int, total: int) -> None:
        anyio.from_thread.run_sync(send.send_nowait, (done, total))

    async def produce() -> None:
        async with send:
            result.append(await _run(engine, req, cancelled, on_text, progress))

    try:
        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(produce)
            async for item in receive:
                yield item
    finally:
        cancelled.set()  # the client went away (or we are done): stop generating


async def _stream(engine: Engine, req: Prepared) -> AsyncIterator[str]:
    cid = f"chatcmpl-{uuid.uuid4().hex}"
    cancelled = threading.Event()
    result: list[Generation] = []
    text: list[str] = []
    yield _chunk(engine, cid, {"role": "assistant", "content": ""})
    sent = 0
    quiet = 0  # pieces generated since anything was sent (a held-back tool call)
    async for item in _generation(engine, req, cancelled, result):
        if isinstance(item, tuple):
            yield _progress_line(*item)
            continue
        text.append(item)
        so_far = "".join(text)
        # in forced mode the reply is the call's arguments: nothing to show as text
        ready = 0 if req.mode == "forced" else hold_back(so_far)
        if ready > sent:
            yield _chunk(engine, cid, {"content": so_far[sent:ready]})
            sent, quiet = ready, 0
        else:
            quiet += 1
            if quiet % KEEPALIVE_PIECES == 0:
                yield ": keel-alive\n\n"  # held text is still being written: not silence
    gen = result[0]
    out = _outcome(req, gen)
    emitted = "".join(text)[:sent]
    if out.content.startswith(emitted) and len(out.content) > len(emitted):
        yield _chunk(engine, cid, {"content": out.content[len(emitted) :]})
    if out.calls:
        yield _chunk(engine, cid, {"tool_calls": _wire_calls(out.calls, stream=True)})
    yield _chunk(engine, cid, {}, out.finish)
    if req.include_usage:
        usage, timings = _usage(gen)
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": engine.name,
            "choices": [],
            "usage": usage,
            "timings": timings,
        }
        yield f"data: {json.dumps(body)}\n\n"
    yield "data: [DONE]\n\n"


def _authorized(request: Request, token: str) -> bool:
    got = request.headers.get("authorization", "")
    return hmac.compare_digest(got.encode("utf-8"), f"Bearer {token}".encode())


async def _parse(request: Request, limits: ServerLimits) -> JsonDict | Response:
    try:
        raw = await _read_body(request, limits.max_body)
    except _TooLarge:
        return _error(413, f"the request body is larger than the server's limit of {limits.max_body:,} bytes")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return _error(400, "the request body is not valid JSON")
    if not isinstance(body, dict):
        return _error(400, "the request body must be a JSON object")
    if not _depth_ok(body):
        return _error(400, f"the request body nests deeper than {MAX_DEPTH} levels")
    return body


def build_app(engine: Engine, *, token: str, limits: ServerLimits | None = None) -> Starlette:
    """The ASGI app serving `engine` (bind it to loopback only).

    Args:
        token: the bearer token every request must carry.
        limits: body size and queue bounds.
    """
    lim = limits or ServerLimits()
    admitted = [0]  # chat requests waiting or running (the event loop is the only writer)

    async def models(_: Request) -> Response:
        return JSONResponse(
            {"object": "list", "data": [{"id": engine.name, "object": "model", "owned_by": "keel"}]}
        )

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def chat(request: Request) -> Response:
        if admitted[0] >= lim.max_queue:
            return JSONResponse(
                {
                    "error": {
                        "message": f"the server is busy ({lim.max_queue} requests waiting); retry shortly",
                        "type": "server_busy",
                    }
                },
                status_code=503,
                headers={"Retry-After": "1"},
            )
        admitted[0] += 1
        streaming = False
        try:
            parsed = await _parse(request, lim)
            if isinstance(parsed, Response):
                return parsed
            try:
                req = await anyio.to_thread.run_sync(engine.prepare, parsed)
            except RequestError as exc:
                return _error(400, str(exc))
            streaming = True
            if req.stream:
                return StreamingResponse(
                    _admitted(_stream(engine, req), admitted), media_type="text/event-stream"
                )
            return StreamingResponse(_admitted(_whole(engine, req), admitted), media_type="application/json")
        finally:
            if not streaming:
                admitted[0] -= 1

    def guarded(route: Handler) -> Handler:
        async def handler(request: Request) -> Response:
            if not _authorized(request, token):
                return _error(401, "missing or wrong bearer token", "authentication_error")
            return await route(request)

        return handler

    async def failed(request: Request, exc: Exception) -> Response:
        traceback.print_exception(exc, file=sys.stderr)
        return _error(
            500, f"the server failed on this request ({type(exc).__name__}); see its log", "server_error"
        )

    return Starlette(
        routes=[
            Route("/v1/models", guarded(models), methods=["GET"]),
            Route("/health", guarded(health), methods=["GET"]),
            Route("/v1/chat/completions", guarded(chat), methods=["POST"]),
        ],
        exception_handlers={Exception: failed},
    )


async def _admitted(stream: AsyncIterator[str], admitted: list[int]) -> AsyncIterator[str]:
    try:
        async for piece in stream:
            yield piece
    finally:
        admitted[0] -= 1


async def _whole(engine: Engine, req: Prepared) -> AsyncIterator[str]:
    """A whole (unstreamed) reply, its headers sent at once and a space sent for each prefill
    chunk and every `KEEPALIVE_PIECES` generated pieces: JSON allows leading whitespace, and
    a client that measures silence sees a request that is still moving."""
    cancelled = threading.Event()
    result: list[Generation] = []
    pieces = 0
    async for item in _generation(engine, req, cancelled, result):
        pieces += isinstance(item, str)
        if isinstance(item, tuple) or pieces % KEEPALIVE_PIECES == 0:
            yield " "
    yield json.dumps(_completion(engine, req, result[0]), ensure_ascii=False)
