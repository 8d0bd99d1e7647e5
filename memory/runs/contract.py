"""What a run store keeps, and the wall a backend implements (`RunDb`).

A *run* is one turn of a session asked for over HTTP: its input (stored before the request
is acknowledged), its status, the worker executing it, and its *events*, each with a
sequence number per run, so a stream can resume after any event on any worker.

Per session at most one run is *active* (an `active` row keyed by the session: taking it
is the atomic admission of a turn, across every worker sharing the store). Idempotency keys
map `(user, key)` to the run they created and the hash of the body that created it.

Backends (`sqlite.py`: `<home>/serve.db`; `postgres.py`: tables in the keel schema) only
open transactions (`RunDb.transaction`) and run the statements of `store.py`, written once
with `?` placeholders.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

__all__ = [
    "TERMINAL",
    "Admission",
    "BusyPolicy",
    "NewRun",
    "Row",
    "RunDb",
    "RunEnd",
    "RunEvent",
    "RunRecord",
    "RunStatus",
    "Tx",
]

RunStatus: TypeAlias = Literal["queued", "running", "completed", "failed", "cancelled"]
BusyPolicy: TypeAlias = Literal["reject", "queue"]
TERMINAL: tuple[RunStatus, ...] = ("completed", "failed", "cancelled")
Row: TypeAlias = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run, as stored."""

    id: str
    session_id: str
    user_id: str
    input: str
    status: RunStatus
    worker: str
    created_at: float
    updated_at: float
    ended_at: float | None
    output: str | None
    error_code: str | None
    error_message: str | None
    cancel_requested: bool

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One event of a run: `seq` counts from 1 per run; `data` is JSON text."""

    seq: int
    type: str
    data: str
    created_at: float


@dataclass(frozen=True, slots=True)
class NewRun:
    """A turn to admit. `idempotency_key` with `body_hash` makes a retry return the same run."""

    id: str
    session_id: str
    user_id: str
    input: str
    worker: str
    busy: BusyPolicy = "reject"
    idempotency_key: str | None = None
    body_hash: str = ""


@dataclass(frozen=True, slots=True)
class Admission:
    """What `RunStore.admit` decided.

    `accepted`: `run` is new (running, or queued behind the active run); `replayed`: the
    idempotency key named `run` with the same body; `conflict`: the key was used with another
    body (`run` is None); `busy`: another run of the session is active (`run` is that one).
    """

    outcome: Literal["accepted", "replayed", "conflict", "busy"]
    run: RunRecord | None


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a run ended, written with its last events."""

    status: Literal["completed", "failed", "cancelled"]
    output: str | None = None
    error_code: str | None = None
    error_message: str | None = None


class Tx(Protocol):
    """One open transaction: statements with `?` placeholders."""

    async def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]: ...

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        """Execute; the number of rows changed."""
        ...

    async def run_many(self, sql: str, params: Sequence[Sequence[object]]) -> None: ...


class RunDb(Protocol):
    """A backend: where the tables are, and transactions on them."""

    @property
    def location(self) -> str: ...

    def transaction(self) -> AbstractAsyncContextManager[Tx]:
        """A write transaction, committed when the block ends, rolled back on an error."""
        ...

    async def aclose(self) -> None: ...
