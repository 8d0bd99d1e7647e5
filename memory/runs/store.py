"""`RunStore`: the rules of runs, events and idempotency keys, written once for both backends.

Every method is one transaction on the backend's `RunDb`. The rules:

- `admit` stores the run (and its input) before anyone is told it was accepted. In one
  transaction it checks the idempotency key (a live key with the same body hash returns its
  run, another body is a conflict), takes the session's `active` row (or, under
  `busy: queue`, stores the run as `queued` behind it), and records the key.
- `append` writes events with the sequence numbers the executing worker drew; with an
  `end` it also ends the run and frees the session, in the same transaction, and only if
  the run had not been ended meanwhile (a run already failed as `worker_lost` stays so).
- `fail_lost` ends a run whose worker is gone: a `run.failed` event after its last one,
  the status `failed` with the reason, the session freed.
- `prune` drops the events of runs that ended before a cut-off, and expired keys.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TypeGuard, get_args

from memory.errors import SessionStoreCorruptError
from memory.runs.contract import (
    TERMINAL,
    Admission,
    NewRun,
    RunDb,
    RunEnd,
    RunEvent,
    RunRecord,
    RunStatus,
    Tx,
)

__all__ = ["IDEMPOTENCY_TTL_S", "RunStore"]

IDEMPOTENCY_TTL_S = 24 * 3600.0
"""How long an idempotency key names its run."""

_COLUMNS = (
    "id, session_id, user_id, input, status, worker, created_at, updated_at, ended_at, output, "
    "error_code, error_message, cancel_requested"
)
_OPEN = "('queued', 'running')"


def _is_status(text: str) -> TypeGuard[RunStatus]:
    return text in get_args(RunStatus)


def _status(value: object) -> RunStatus:
    """A stored run's status (written only from `RunStatus` values, so another is damage)."""
    text = str(value)
    if not _is_status(text):
        raise SessionStoreCorruptError(
            f"a stored run has the unknown status {text!r}; the run store is damaged"
        )
    return text


def _record(row: Sequence[object]) -> RunRecord:
    (rid, sid, uid, text, status, worker, created, updated, ended, output, code, message, cancel) = row
    return RunRecord(
        id=str(rid),
        session_id=str(sid),
        user_id=str(uid),
        input=str(text),
        status=_status(status),
        worker=str(worker),
        created_at=float(str(created)),
        updated_at=float(str(updated)),
        ended_at=None if ended is None else float(str(ended)),
        output=None if output is None else str(output),
        error_code=None if code is None else str(code),
        error_message=None if message is None else str(message),
        cancel_requested=bool(cancel),
    )


async def _get(tx: Tx, run_id: str) -> RunRecord | None:
    rows = await tx.rows(f"SELECT {_COLUMNS} FROM serve_runs WHERE id = ?", (run_id,))
    return _record(rows[0]) if rows else None


class RunStore:
    """Runs, their events and idempotency keys on one backend (see the module docstring)."""

    def __init__(self, db: RunDb) -> None:
        self._db = db

    @property
    def location(self) -> str:
        return self._db.location

    async def aclose(self) -> None:
        await self._db.aclose()

    async def ping(self) -> None:
        """One round trip to the store (raises what the backend raises when it is down)."""
        async with self._db.transaction() as tx:
            await tx.rows("SELECT 1")

    async def admit(self, new: NewRun, *, now: float | None = None) -> Admission:
        """Store `new` as running (or queued), or say why not (see `Admission`)."""
        stamp = time.time() if now is None else now
        async with self._db.transaction() as tx:
            if new.idempotency_key is not None:
                seen = await self._replay(tx, new, stamp)
                if seen is not None:
                    return seen
            status = "running"
            taken = await tx.run(
                "INSERT INTO serve_active (session_id, run_id) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING",
                (new.session_id, new.id),
            )
            if not taken:
                if new.busy == "reject":
                    holder = await tx.rows(
                        "SELECT run_id FROM serve_active WHERE session_id = ?", (new.session_id,)
                    )
                    return Admission("busy", await _get(tx, str(holder[0][0])) if holder else None)
                status = "queued"
            await tx.run(
                f"INSERT INTO serve_runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, 0)",
                (new.id, new.session_id, new.user_id, new.input, status, new.worker, stamp, stamp),
            )
            if new.idempotency_key is not None:
                await tx.run(
                    "INSERT INTO serve_idempotency (user_id, key, body_hash, run_id, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (new.user_id, new.idempotency_key, new.body_hash, new.id, stamp),
                )
            return Admission("accepted", await _get(tx, new.id))

    async def _replay(self, tx: Tx, new: NewRun, stamp: float) -> Admission | None:
        rows = await tx.rows(
            "SELECT body_hash, run_id, created_at FROM serve_idempotency WHERE user_id = ? AND key = ?",
            (new.user_id, new.idempotency_key),
        )
        if not rows:
            return None
        body_hash, run_id, created = rows[0]
        if float(str(created)) < stamp - IDEMPOTENCY_TTL_S:
            await tx.run(
                "DELETE FROM serve_idempotency WHERE user_id = ? AND key = ?",
                (new.user_id, new.idempotency_key),
            )
            return None
        if body_hash != new.body_hash:
            return Admission("conflict", None)
        return Admission("replayed", await _get(tx, str(run_id)))

    async def start_queued(self, run_id: str, *, now: float | None = None) -> bool:
        """Take the session for a queued run when it is free and no older run waits; True when taken."""
        stamp = time.time() if now is None else now
        async with self._db.transaction() as tx:
            run = await _get(tx, run_id)
            if run is None or run.status != "queued":
                return False
            older = await tx.rows(
                "SELECT 1 FROM serve_runs WHERE session_id = ? AND status = 'queued' AND created_at < ?",
                (run.session_id, run.created_at),
            )
            if older:
                return False
            taken = await tx.run(
                "INSERT INTO serve_active (session_id, run_id) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING",
                (run.session_id, run_id),
            )
            if taken:
                await tx.run(
                    "UPDATE serve_runs SET status = 'running', updated_at = ? WHERE id = ?", (stamp, run_id)
                )
            return bool(taken)

    async def append(
        self,
        run_id: str,
        events: Sequence[tuple[int, str, str]],
        *,
        end: RunEnd | None = None,
        now: float | None = None,
    ) -> bool:
        """Write `(seq, type, data)` events, and with `end` end the run; False when it had ended already."""
        stamp = time.time() if now is None else now
        async with self._db.transaction() as tx:
            if end is not None:
                changed = await tx.run(
                    "UPDATE serve_runs SET status = ?, output = ?, error_code = ?, error_message = ?, "
                    f"ended_at = ?, updated_at = ? WHERE id = ? AND status IN {_OPEN}",
                    (end.status, end.output, end.error_code, end.error_message, stamp, stamp, run_id),
                )
                if not changed:
                    return False
                await tx.run("DELETE FROM serve_active WHERE run_id = ?", (run_id,))
            if events:
                await tx.run_many(
                    "INSERT INTO serve_events (run_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
                    [(run_id, seq, kind, data, stamp) for seq, kind, data in events],
                )
            return True

    async def fail_lost(self, run_id: str, *, code: str, message: str, now: float | None = None) -> bool:
        """End a run whose worker is gone (a `run.failed` event after its last); False if it had ended."""
        stamp = time.time() if now is None else now
        async with self._db.transaction() as tx:
            changed = await tx.run(
                "UPDATE serve_runs SET status = 'failed', error_code = ?, error_message = ?, ended_at = ?, "
                f"updated_at = ? WHERE id = ? AND status IN {_OPEN}",
                (code, message, stamp, stamp, run_id),
            )
            if not changed:
                return False
            await tx.run("DELETE FROM serve_active WHERE run_id = ?", (run_id,))
            last = await tx.rows("SELECT COALESCE(max(seq), 0) FROM serve_events WHERE run_id = ?", (run_id,))
            data = json.dumps({"error": {"code": code, "message": message}})
            await tx.run(
                "INSERT INTO serve_events (run_id, seq, type, data, created_at) VALUES (?, ?, 'run.failed', ?, ?)",
                (run_id, int(str(last[0][0])) + 1, data, stamp),
            )
            return True

    async def request_cancel(self, run_id: str) -> RunRecord | None:
        """Mark a run for cancelling (its worker notices); the run as it is now."""
        async with self._db.transaction() as tx:
            await tx.run(
                f"UPDATE serve_runs SET cancel_requested = 1 WHERE id = ? AND status IN {_OPEN}", (run_id,)
            )
            return await _get(tx, run_id)

    async def get(self, run_id: str) -> RunRecord | None:
        async with self._db.transaction() as tx:
            return await _get(tx, run_id)

    async def events_after(self, run_id: str, after: int, *, limit: int = 200) -> list[RunEvent]:
        """The run's events with `seq > after`, in order, at most `limit`."""
        async with self._db.transaction() as tx:
            rows = await tx.rows(
                "SELECT seq, type, data, created_at FROM serve_events WHERE run_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (run_id, after, limit),
            )
        return [RunEvent(int(str(s)), str(t), str(d), float(str(c))) for s, t, d, c in rows]

    async def session_runs(self, session_id: str) -> list[RunRecord]:
        """Every run of a session, oldest first."""
        async with self._db.transaction() as tx:
            rows = await tx.rows(
                f"SELECT {_COLUMNS} FROM serve_runs WHERE session_id = ? ORDER BY created_at, id",
                (session_id,),
            )
        return [_record(r) for r in rows]

    async def open_runs(self, *, exclude_worker: str | None = None) -> list[RunRecord]:
        """Runs not ended (running or queued), maybe leaving out one worker's."""
        async with self._db.transaction() as tx:
            rows = await tx.rows(
                f"SELECT {_COLUMNS} FROM serve_runs WHERE status IN {_OPEN} AND worker <> ?",
                (exclude_worker or "",),
            )
        return [_record(r) for r in rows]

    async def cancels_for(self, worker: str) -> list[str]:
        """The ids of `worker`'s open runs someone asked to cancel."""
        async with self._db.transaction() as tx:
            rows = await tx.rows(
                f"SELECT id FROM serve_runs WHERE worker = ? AND cancel_requested = 1 AND status IN {_OPEN}",
                (worker,),
            )
        return [str(r[0]) for r in rows]

    async def prune(self, *, events_before: float, now: float | None = None) -> int:
        """Drop the events of runs that ended before `events_before`, and expired keys; events dropped."""
        stamp = time.time() if now is None else now
        async with self._db.transaction() as tx:
            dropped = await tx.run(
                "DELETE FROM serve_events WHERE run_id IN (SELECT id FROM serve_runs WHERE ended_at IS NOT NULL "
                f"AND ended_at < ? AND status IN ({', '.join(repr(s) for s in TERMINAL)}))",
                (events_before,),
            )
            await tx.run("DELETE FROM serve_idempotency WHERE created_at < ?", (stamp - IDEMPOTENCY_TTL_S,))
        return dropped
