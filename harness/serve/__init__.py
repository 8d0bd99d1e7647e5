# `keel serve`: sessions over HTTP on stateless workers that share the configured storage.
# `app.py` (create_app, and open_worker: what a worker process opens), `worker.py` (sessions
# and runs: admission, execution, events, liveness and the sweep), `native.py` (keel's own
# API), `openai_chat.py` and `openai_responses.py` (the OpenAI-compatible doors, sharing
# `doors.py`), `events.py` (a turn's events as run events), `sse.py` (the stream's framing),
# `http.py` (errors, capped bodies), `auth.py` (keys → principals), `state.py` (what the
# routes share), `server.py` (uvicorn, one or several worker processes).
"""`keel serve`: the HTTP door to keel sessions (see docs/serve.md)."""

from harness.serve.app import create_app, open_worker
from harness.serve.server import run_server

__all__ = ["create_app", "open_worker", "run_server"]
