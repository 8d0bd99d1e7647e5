"""Running the app under uvicorn: one process, or `workers` processes sharing the port.

With several workers uvicorn starts each from an import string, so the validated config
travels to them as JSON in `$KEEL_SERVE_CONFIG_JSON` and `app_from_env` rebuilds it there.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

import uvicorn
from starlette.applications import Starlette

from harness.config import KeelConfig
from harness.serve.app import create_app
from harness.serve.auth import Keys, check_bind

__all__ = ["CONFIG_ENV", "app_from_env", "run_server"]

CONFIG_ENV = "KEEL_SERVE_CONFIG_JSON"


def app_from_env() -> Starlette:
    """The app of one worker process started by uvicorn (`--workers N`)."""
    return create_app(KeelConfig.model_validate_json(os.environ[CONFIG_ENV]))


def run_server(
    config: KeelConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8340,
    workers: int = 1,
    environ: MutableMapping[str, str] | None = None,
    log_level: str = "info",
) -> None:
    """Serve until interrupted (blocking: it owns the process).

    Raises:
        ConfigError: no keys and a non-loopback host, or a key missing from the environment.
    """
    env = os.environ if environ is None else environ
    check_bind(config, host)
    Keys.from_config(config, env)  # a missing key stops the start, before any worker

    def serve(app: Starlette | str, *, factory: bool = False, processes: int | None = None) -> None:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level=log_level,
            lifespan="on",
            # event streams and their clients' next request reuse connections: keep idle ones a while
            timeout_keep_alive=30,
            timeout_graceful_shutdown=max(1, round(config.serve.drain_s)),
            factory=factory,
            workers=processes,
        )

    if workers <= 1:
        serve(create_app(config, environ=env))
        return
    env[CONFIG_ENV] = config.model_dump_json()
    serve("harness.serve.server:app_from_env", factory=True, processes=workers)
