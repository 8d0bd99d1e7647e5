# The run store behind `keel serve`: runs (one turn of a session asked for over HTTP), their
# events with a sequence number per run, the active run per session, idempotency keys.
# `contract.py` (records and the backend wall), `store.py` (the rules, written once),
# `_schema.py` (the migrations), `sqlite.py` (`<home>/serve.db`), `postgres.py` (tables in
# the keel schema), `factory.py` (`open_run_store`), `liveness.py` (a lock per live worker).
"""The run store behind `keel serve` (see `memory.runs.store`)."""

from memory.runs.contract import Admission, NewRun, RunEnd, RunEvent, RunRecord
from memory.runs.factory import open_run_store
from memory.runs.liveness import FileLiveness, Liveness, PgLiveness
from memory.runs.store import RunStore

__all__ = [
    "Admission",
    "FileLiveness",
    "Liveness",
    "NewRun",
    "PgLiveness",
    "RunEnd",
    "RunEvent",
    "RunRecord",
    "RunStore",
    "open_run_store",
]
