"""keel's own API: sessions, turns, runs and their event streams (docs/serve.md)."""

from __future__ import annotations

import hashlib
import json

from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from harness.serve.http import Body, read_json, read_model
from harness.serve.sse import resume_point, sse_response
from harness.serve.state import ServeState
from memory.runs import RunRecord

__all__ = ["native_routes", "run_json"]


class NewSession(Body):
    """`POST /v1/sessions`: no fields yet (an empty body or `{}`)."""


class NewTurn(Body):
    input: str = Field(min_length=1)


def run_json(run: RunRecord) -> dict[str, object]:
    """A run as the API shows it."""
    error = None if run.error_code is None else {"code": run.error_code, "message": run.error_message}
    return {
        "id": run.id,
        "object": "run",
        "session_id": run.session_id,
        "status": run.status,
        "input": run.input,
        "output": run.output,
        "error": error,
        "created_at": run.created_at,
        "ended_at": run.ended_at,
    }


def native_routes(state: ServeState) -> list[BaseRoute]:
    """The routes of the native API, over `state` (filled in when the server starts)."""

    async def healthz(request: Request) -> Response:
        await state.worker.runs.ping()
        return JSONResponse({"status": "ok", "storage": state.worker.parts.stores.backend})

    async def models(request: Request) -> Response:
        state.keys.principal(request)
        name = state.worker.parts.model.model_name
        return JSONResponse(
            {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "keel"}]}
        )

    async def new_session(request: Request) -> Response:
        principal = state.keys.principal(request)
        read_model(await read_json(request, state.cap), NewSession)
        session_id = await state.worker.new_session(principal)
        return JSONResponse({"id": session_id, "object": "session"}, status_code=201)

    async def messages(request: Request) -> Response:
        principal = state.keys.principal(request)
        root = await state.worker.conversation(principal, request.path_params["session_id"])
        return JSONResponse({"object": "list", "session_id": root, "data": await state.worker.messages(root)})

    async def new_turn(request: Request) -> Response:
        principal = state.keys.principal(request)
        data = await read_json(request, state.cap)
        turn = read_model(data, NewTurn)
        root = await state.worker.conversation(principal, request.path_params["session_id"])
        key = request.headers.get("idempotency-key") or None
        digest = hashlib.sha256(json.dumps([root, data], sort_keys=True).encode()).hexdigest()
        run = await state.worker.submit(principal, root, turn.input, key=key, body_hash=digest)
        return JSONResponse({"run_id": run.id, "session_id": root, "status": run.status}, status_code=202)

    async def get_run(request: Request) -> Response:
        principal = state.keys.principal(request)
        return JSONResponse(run_json(await state.worker.run_of(principal, request.path_params["run_id"])))

    async def cancel_run(request: Request) -> Response:
        principal = state.keys.principal(request)
        return JSONResponse(run_json(await state.worker.cancel(principal, request.path_params["run_id"])))

    async def run_events(request: Request) -> Response:
        principal = state.keys.principal(request)
        run = await state.worker.run_of(principal, request.path_params["run_id"])
        return sse_response(state.worker.follow(run.id, resume_point(request)))

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/sessions", new_session, methods=["POST"]),
        Route("/v1/sessions/{session_id}/messages", messages, methods=["GET"]),
        Route("/v1/sessions/{session_id}/turns", new_turn, methods=["POST"]),
        Route("/v1/runs/{run_id}", get_run, methods=["GET"]),
        Route("/v1/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
        Route("/v1/runs/{run_id}/events", run_events, methods=["GET"]),
    ]
