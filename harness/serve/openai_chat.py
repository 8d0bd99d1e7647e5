"""`POST /v1/chat/completions`, so OpenAI clients talk to a keel session unchanged.

The session is named by the `X-Keel-Session` header (created when absent, and returned in
the response header of the same name). keel holds the history: only the request's last user
message is the new turn. The turn is an ordinary run (stored, streamed from the store).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from harness.serve.doors import SESSION_HEADER, failed, finish, last_user_text, start_turn, usage_numbers
from harness.serve.http import error_response, read_json
from harness.serve.sse import SSE_HEADERS
from harness.serve.state import ServeState

__all__ = ["chat_routes"]


def _usage(usage: dict[str, int]) -> dict[str, object]:
    prompt, cached, output = usage_numbers(usage)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def chat_routes(state: ServeState) -> list[BaseRoute]:
    async def completions(request: Request) -> Response:
        principal = state.keys.principal(request)
        data = await read_json(request, state.cap)
        text = last_user_text(data.get("messages"), "messages")
        options = data.get("stream_options")
        usage_chunk = isinstance(options, dict) and bool(options.get("include_usage"))
        named = request.headers.get(SESSION_HEADER)
        root, run, model = await start_turn(state, principal, named, text, data.get("model"))
        headers = {SESSION_HEADER: root}
        base = {"id": f"chatcmpl-{run.id}", "created": int(run.created_at), "model": model}
        if data.get("stream"):
            return StreamingResponse(
                _chunks(state, run.id, base, usage_chunk),
                media_type="text/event-stream",
                headers={**SSE_HEADERS, **headers},
            )
        done = await finish(state.worker.follow(run.id, 0))
        if done.error is not None:
            return error_response(failed(done.error, root), headers)
        message = {"role": "assistant", "content": done.text}
        body = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": _usage(done.usage),
        }
        return JSONResponse(body, headers=headers)

    return [Route("/v1/chat/completions", completions, methods=["POST"])]


async def _chunks(
    state: ServeState, run_id: str, base: dict[str, object], usage_chunk: bool
) -> AsyncIterator[bytes]:
    def chunk(delta: dict[str, object], finish_reason: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        body = {**base, "object": "chat.completion.chunk", "choices": [choice]}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""}, None)
    async for ev in state.worker.follow(run_id, 0):
        data = json.loads(ev.data)
        if ev.type == "text.delta":
            yield chunk({"content": data["text"]}, None)
        elif ev.type == "run.completed":
            yield chunk({}, "stop")
            if usage_chunk:
                body = {
                    **base,
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": _usage(data.get("usage") or {}),
                }
                yield f"data: {json.dumps(body)}\n\n".encode()
        elif ev.type == "run.failed":
            error = data.get("error") or {}
            body = {
                "error": {
                    "message": error.get("message", "the run failed"),
                    "type": "server_error",
                    "code": error.get("code"),
                }
            }
            yield f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()
    yield b"data: [DONE]\n\n"
