"""`POST /v1/responses`: OpenAI's Responses API over a keel session.

`previous_response_id` continues the conversation of that response, as does `conversation`
naming a keel session (a string or `{"id": ...}`); with neither a new session starts. A
response id is its run's (`resp_<hex>` for `run_<hex>`). Streaming sends
`response.created`, `response.output_text.delta` and `response.completed` (or
`response.failed`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from harness.serve.doors import SESSION_HEADER, failed, finish, last_user_text, start_turn, usage_numbers
from harness.serve.http import ApiError, error_response, read_json
from harness.serve.sse import SSE_HEADERS, frame
from harness.serve.state import ServeState
from memory import Principal
from memory.runs import RunRecord

__all__ = ["responses_routes"]


def response_id(run_id: str) -> str:
    return "resp_" + run_id.removeprefix("run_")


async def _session_named(state: ServeState, principal: Principal, data: dict[str, object]) -> str | None:
    previous = data.get("previous_response_id")
    if isinstance(previous, str) and previous:
        run = await state.worker.run_of(principal, "run_" + previous.removeprefix("resp_"))
        return run.session_id
    conversation = data.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
    if conversation is not None and not isinstance(conversation, str):
        raise ApiError(
            400,
            "invalid_request",
            "'conversation' must be a session id or {\"id\": ...}",
            field="conversation",
        )
    return conversation or None


def _shape(
    run: RunRecord,
    model: str,
    root: str,
    *,
    status: str,
    text: str = "",
    usage: dict[str, int] | None = None,
    error: dict[str, str] | None = None,
) -> dict[str, object]:
    output: list[dict[str, object]] = []
    if status == "completed":
        content = [{"type": "output_text", "text": text, "annotations": []}]
        output.append(
            {
                "type": "message",
                "id": "msg_" + run.id.removeprefix("run_"),
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
        )
    body: dict[str, object] = {
        "id": response_id(run.id),
        "object": "response",
        "created_at": int(run.created_at),
        "status": status,
        "model": model,
        "output": output,
        "error": error,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "conversation": {"id": root},
    }
    if usage is not None:
        prompt, cached, out = usage_numbers(usage)
        body["usage"] = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + out,
        }
    return body


def responses_routes(state: ServeState) -> list[BaseRoute]:
    async def create(request: Request) -> Response:
        principal = state.keys.principal(request)
        data = await read_json(request, state.cap)
        text = last_user_text(data.get("input"), "input")
        named = await _session_named(state, principal, data)
        root, run, model = await start_turn(state, principal, named, text, data.get("model"))
        headers = {SESSION_HEADER: root}
        if data.get("stream"):
            return StreamingResponse(
                _events(state, run, model, root),
                media_type="text/event-stream",
                headers={**SSE_HEADERS, **headers},
            )
        done = await finish(state.worker.follow(run.id, 0))
        if done.error is not None:
            return error_response(failed(done.error, root), headers)
        return JSONResponse(
            _shape(run, model, root, status="completed", text=done.text, usage=done.usage), headers=headers
        )

    return [Route("/v1/responses", create, methods=["POST"])]


async def _events(state: ServeState, run: RunRecord, model: str, root: str) -> AsyncIterator[bytes]:
    n = 0

    def event(kind: str, body: dict[str, object]) -> bytes:
        nonlocal n
        n += 1
        return frame(kind, json.dumps({"type": kind, "sequence_number": n, **body}, ensure_ascii=False))

    item = "msg_" + run.id.removeprefix("run_")
    yield event("response.created", {"response": _shape(run, model, root, status="in_progress")})
    chunks: list[str] = []
    async for ev in state.worker.follow(run.id, 0):
        data = json.loads(ev.data)
        if ev.type == "text.delta":
            chunks.append(data["text"])
            yield event(
                "response.output_text.delta",
                {
                    "item_id": item,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": data["text"],
                    "logprobs": [],
                },
            )
        elif ev.type == "run.completed":
            text = str(data.get("output") or "".join(chunks))
            yield event(
                "response.output_text.done",
                {"item_id": item, "output_index": 0, "content_index": 0, "text": text, "logprobs": []},
            )
            yield event(
                "response.completed",
                {
                    "response": _shape(
                        run, model, root, status="completed", text=text, usage=data.get("usage") or {}
                    )
                },
            )
        elif ev.type == "run.failed":
            yield event(
                "response.failed",
                {"response": _shape(run, model, root, status="failed", error=data.get("error"))},
            )
