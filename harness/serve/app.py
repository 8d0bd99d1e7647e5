"""`create_app`: the ASGI app of `keel serve`, and `open_worker`, what its lifespan opens.

The lifespan opens, in order: the configured stores (files or PostgreSQL, shared by every
session the worker opens), the run store beside them, the model client (one, shared), the
worker's liveness lock (`memory.runs.liveness`), and a task group for runs and the sweep. On shutdown running runs
get `serve.drain_s` to finish, then are cancelled (ended `failed`, `worker_stopped`).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from harness.config import KeelConfig
from harness.models.factory import open_model
from harness.serve.auth import Keys
from harness.serve.http import ApiError, error_response
from harness.serve.native import native_routes
from harness.serve.openai_chat import chat_routes
from harness.serve.openai_responses import responses_routes
from harness.serve.state import ServeState
from harness.serve.worker import Worker, WorkerParts
from harness.wiring import open_stores
from memory import SessionStoreError
from memory.runs import FileLiveness, Liveness, PgLiveness, open_run_store

__all__ = ["create_app", "open_worker"]

log = logging.getLogger("keel.serve")


@asynccontextmanager
async def open_worker(config: KeelConfig, environ: Mapping[str, str]) -> AsyncIterator[Worker]:
    """Everything one worker process needs, closed in reverse on exit (see the module docstring)."""
    home = config.resolved_home(environ).expanduser()
    await anyio.to_thread.run_sync(lambda: home.mkdir(parents=True, exist_ok=True))
    s = config.sessions
    async with AsyncExitStack() as stack:
        stores = await stack.enter_async_context(open_stores(config, home))
        runs = await stack.enter_async_context(
            open_run_store(
                config.storage.backend,
                home=home,
                url=s.url,
                pg_schema=s.pg_schema,
                pool_size=2 * s.pool_size,  # every event stream of this worker reads through it
                connect_timeout_s=s.connect_timeout_s,
            )
        )
        model = await stack.enter_async_context(open_model(config, home=home, environ=environ))
        liveness: Liveness
        if stores.backend == "postgres":
            liveness = PgLiveness(s.url or "", schema=s.pg_schema, connect_timeout_s=s.connect_timeout_s)
        else:
            liveness = FileLiveness(home / "leases")
        worker_id = uuid.uuid4().hex[:16]
        await stack.enter_async_context(liveness.hold(worker_id))
        parts = WorkerParts(config, home, environ, stores, runs, model, liveness, worker_id)
        async with anyio.create_task_group() as tg:
            worker = Worker(parts, tg)
            tg.start_soon(worker.sweep_forever)
            try:
                yield worker
            finally:
                with anyio.move_on_after(config.serve.drain_s, shield=True):
                    await worker.idle()
                tg.cancel_scope.cancel()


def create_app(config: KeelConfig, *, environ: Mapping[str, str] | None = None) -> Starlette:
    """The app; its lifespan opens the worker (`open_worker`).

    Raises:
        ConfigError: a key named in `serve.keys` is missing from the environment.
    """
    env = os.environ if environ is None else environ
    state = ServeState(Keys.from_config(config, env), config.serve.max_body_bytes)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with open_worker(config, env) as worker:
            state.started(worker)
            log.info("keel serve worker %s ready (storage: %s)", worker.id, worker.runs.location)
            try:
                yield
            finally:
                state.started(None)

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc, headers)

    async def storage_error(request: Request, exc: Exception) -> Response:
        log.warning("storage error: %s", exc)
        return error_response(
            ApiError(503, "storage_unavailable", f"the storage cannot be used now ({exc}); retry")
        )

    return Starlette(
        routes=[*native_routes(state), *chat_routes(state), *responses_routes(state)],
        lifespan=lifespan,
        exception_handlers={ApiError: api_error, SessionStoreError: storage_error},
    )
