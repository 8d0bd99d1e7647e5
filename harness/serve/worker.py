"""`Worker`: what one `keel serve` process does with sessions and runs.

A worker holds no session between requests. A turn is admitted into the run store (its
input stored, the session's active row taken) before the 202; the worker then opens the
session from the configured stores (`open_session(resume=...)`, which follows compressions
to the newest child), runs the turn under the session lease, and writes its events to the
run store as they come (batched: everything queued is written in one transaction). Any
worker serves any run's stream from the store.

Every worker holds a *liveness lock* (`memory.runs.liveness`: a lock file, or an advisory
lock on PostgreSQL) for as long as it lives. A sweep, every second or so, looks at the runs
other workers left open: a run whose worker's lock is free belongs to a dead worker, and is
failed with `worker_lost` (its events stay; the next turn runs anywhere). The sweep also
cancels this worker's runs someone asked to cancel on another worker, and prunes events
older than `serve.events_retention`.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream

from harness.config import KeelConfig
from harness.errors import ModelError, SessionError
from harness.events import TurnEnded, UsageReported
from harness.models.base import ModelClient
from harness.serve.events import END_TYPES, Totals, run_event
from harness.serve.http import ApiError
from harness.wiring import SessionOptions, Stores, open_session
from memory import Principal, SessionBusyError, SessionStoreError, SessionStoreUnavailableError
from memory.runs import Liveness, NewRun, RunEnd, RunEvent, RunRecord, RunStore

__all__ = ["Worker", "WorkerParts"]

log = logging.getLogger("keel.serve")

_EVENT_BUFFER = 256  # events a run may queue for its writer before the turn waits (back-pressure)
_PAGE = 200  # events read from the store per query when streaming
_REMOTE_POLL_S = 0.2  # how often a stream of a run on another worker looks for new events
_PRUNE_EVERY_S = 3600.0
_STORE_RETRY_S = 0.5  # a stream's pause before reading again after the storage failed
_WRITE_PATIENCE_S = 120.0  # how long a run's events and its end are retried while the storage is unavailable


Emit = Callable[[str, dict[str, object]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class WorkerParts:
    """What a worker is built from (opened by the app's lifespan)."""

    config: KeelConfig
    home: Path
    environ: Mapping[str, str]
    stores: Stores
    runs: RunStore
    model: ModelClient
    liveness: Liveness
    """Holds this worker's liveness lock (opened by the app) and tests other workers'."""
    worker_id: str


class Worker:
    """Sessions and runs for the HTTP routes; background work runs in `tg`."""

    def __init__(self, parts: WorkerParts, tg: anyio.abc.TaskGroup) -> None:
        self.parts = parts
        self.config = parts.config
        self.runs = parts.runs
        self.id = parts.worker_id
        self._tg = tg
        self._limiter = anyio.CapacityLimiter(parts.config.serve.max_running)
        self._changed: dict[str, anyio.Event] = {}  # set when a run's events were written
        self._followers: dict[str, int] = {}  # streams following each run here
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._last_prune = 0.0
        self._idle = anyio.Event()

    @property
    def running(self) -> int:
        """Runs executing (or waiting for a slot) in this worker."""
        return len(self._scopes)

    async def idle(self) -> None:
        """Return once no run executes in this worker."""
        while self._scopes:
            self._idle = anyio.Event()
            await self._idle.wait()

    # ------------------------------------------------------------------ sessions

    def _options(self, principal: Principal, resume: str | None) -> SessionOptions:
        return SessionOptions(
            model=self.parts.model,
            home=self.parts.home,
            environ=self.parts.environ,
            source="serve",
            user_id=principal.user_id,
            workspace=principal.workspace,
            stores=self.parts.stores,
            resume=resume,
        )

    async def new_session(self, principal: Principal) -> str:
        """Create an empty session for `principal`; its id (the lineage root of what follows)."""
        async with open_session(self.config, self._options(principal, None)) as session:
            return session.session_id

    async def conversation(self, principal: Principal, session_id: str) -> str:
        """The lineage root of `principal`'s session `session_id`.

        Raises:
            ApiError: 404 when there is no such session, or it is another principal's.
        """
        db = self.parts.stores.sessions
        record = await db.get_session(session_id)
        if record is None or record.user_id != principal.session_user:
            raise ApiError(404, "not_found", f"no session {session_id!r}; create one with POST /v1/sessions")
        return await db.lineage_root(session_id)

    async def messages(self, root: str) -> list[dict[str, object]]:
        """The conversation as its user saw it: every turn's input and reply, across compressions."""
        out: list[dict[str, object]] = []
        for run in await self.runs.session_runs(root):
            out.append({"role": "user", "content": run.input, "run_id": run.id, "created_at": run.created_at})
            if run.output is not None:
                out.append(
                    {"role": "assistant", "content": run.output, "run_id": run.id, "created_at": run.ended_at}
                )
        return out

    # ------------------------------------------------------------------ runs

    async def submit(
        self, principal: Principal, root: str, text: str, *, key: str | None = None, body_hash: str = ""
    ) -> RunRecord:
        """Admit a turn of `root` and start it; the run (a replay of `key` returns the first).

        Raises:
            ApiError: 409 `session_busy` or `idempotency_conflict`.
        """
        new = NewRun(
            id=f"run_{uuid.uuid4().hex}",
            session_id=root,
            user_id=principal.session_user,
            input=text,
            worker=self.id,
            busy=self.config.serve.busy,
            idempotency_key=key,
            body_hash=body_hash,
        )
        admission = await self.runs.admit(new)
        if admission.outcome == "busy" and admission.run is not None and await self._lost(admission.run):
            admission = await self.runs.admit(new)  # its holder was dead: freed, try once more
        if admission.outcome == "conflict":
            raise ApiError(
                409,
                "idempotency_conflict",
                f"Idempotency-Key {key!r} was used with a different body; use a new key for a new turn",
            )
        if admission.outcome == "busy" or admission.run is None:
            holder = "" if admission.run is None else f" (run {admission.run.id!r})"
            raise ApiError(
                409,
                "session_busy",
                f"session {root!r} is running another turn{holder}; retry when it ends, or set serve.busy: queue",
            )
        run = admission.run
        if admission.outcome == "accepted":
            self._tg.start_soon(self._execute, run, principal)
        return run

    async def run_of(self, principal: Principal, run_id: str) -> RunRecord:
        """`principal`'s run `run_id` (a run of a dead worker is failed first).

        Raises:
            ApiError: 404 when there is no such run, or it is another principal's.
        """
        run = await self.runs.get(run_id)
        if run is None or run.user_id != principal.session_user:
            raise ApiError(404, "not_found", f"no run {run_id!r}")
        if not run.ended and await self._lost(run):
            run = await self.runs.get(run_id) or run
        return run

    async def cancel(self, principal: Principal, run_id: str) -> RunRecord:
        """Cancel a run on whichever worker executes it; the run as it is now."""
        run = await self.run_of(principal, run_id)
        if run.ended:
            return run
        scope = self._scopes.get(run_id)
        if scope is not None:
            scope.cancel()
        else:
            await self.runs.request_cancel(run_id)
        return await self.runs.get(run_id) or run

    async def follow(self, run_id: str, after: int) -> AsyncIterator[RunEvent]:
        """The run's events after `after`, as they are written, until its last."""
        self._followers[run_id] = self._followers.get(run_id, 0) + 1
        try:
            while True:
                # taken before reading: a batch written after the read sets it, none is missed
                changed = self._changed.setdefault(run_id, anyio.Event())
                try:
                    batch = await self.runs.events_after(run_id, after, limit=_PAGE)
                except SessionStoreError as exc:  # a storage blip: the stream waits, it does not break
                    log.warning("reading run %s's events failed (%s); retrying", run_id, exc)
                    await anyio.sleep(_STORE_RETRY_S)
                    continue
                for ev in batch:
                    yield ev
                    after = ev.seq
                    if ev.type in END_TYPES:
                        return
                if len(batch) == _PAGE:
                    continue  # more may be written already
                try:
                    if not batch and await self._over(run_id, after):
                        return
                except SessionStoreError as exc:
                    log.warning("checking run %s failed (%s); retrying", run_id, exc)
                with anyio.move_on_after(1.0 if run_id in self._scopes else _REMOTE_POLL_S):
                    await changed.wait()
        finally:
            self._followers[run_id] -= 1
            if not self._followers[run_id]:
                del self._followers[run_id]
                self._changed.pop(run_id, None)

    async def _over(self, run_id: str, after: int) -> bool:
        """Whether a stream at `after` has nothing more to wait for (the run ended or is gone)."""
        run = await self.runs.get(run_id)
        if run is None:
            return True
        if run.ended or (run.worker != self.id and await self._lost(run)):
            # ended: its events are all written (or pruned) unless some follow `after`
            return not await self.runs.events_after(run_id, after, limit=1)
        return False

    def _notify(self, run_id: str) -> None:
        changed = self._changed.pop(run_id, None)
        if changed is not None:
            changed.set()

    # ------------------------------------------------------------------ execution

    async def _execute(self, run: RunRecord, principal: Principal) -> None:
        """Run one admitted turn and write its events; never raises (failures end the run)."""
        send, receive = anyio.create_memory_object_stream[tuple[int, str, str]](_EVENT_BUFFER)
        seq = 0

        async def emit(kind: str, data: dict[str, object]) -> None:
            nonlocal seq
            seq += 1
            await send.send((seq, kind, json.dumps(data, ensure_ascii=False)))

        scope = anyio.CancelScope()
        self._scopes[run.id] = scope
        outcome = _Outcome(
            RunEnd(
                "failed", error_code="worker_stopped", error_message="the worker stopped before the run ended"
            )
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._write_events, run.id, receive)
                async with send:
                    with scope:
                        outcome = await self._turn(run, principal, emit)
                    if scope.cancelled_caught:
                        outcome = _Outcome(
                            RunEnd("cancelled", error_code="cancelled", error_message="the run was cancelled")
                        )
        finally:
            self._scopes.pop(run.id, None)
            if not self._scopes:
                self._idle.set()
            with anyio.CancelScope(shield=True):
                await self._finish(run.id, seq + 1, outcome)

    async def _turn(self, run: RunRecord, principal: Principal, emit: Emit) -> _Outcome:
        if run.status == "queued" and not await self._wait_turn(run.id):
            return _Outcome(
                RunEnd("failed", error_code="cancelled", error_message="the queued run was ended")
            )
        async with self._limiter:
            await emit("run.started", {"run_id": run.id, "session_id": run.session_id})
            totals, final = Totals(), ""
            try:
                async with (
                    open_session(self.config, self._options(principal, run.session_id)) as session,
                    session.run_turn(run.input) as events,
                ):
                    async for ev in events:
                        if isinstance(ev, UsageReported):
                            totals.add(ev)
                        elif isinstance(ev, TurnEnded):
                            final = ev.final_text
                        mapped = run_event(ev)
                        if mapped is not None:
                            await emit(*mapped)
            except Exception as exc:  # every failure ends the run with its reason; the session stays
                return _Outcome(_failure(exc))
        return _Outcome(RunEnd("completed", output=final), totals.as_dict())

    async def _wait_turn(self, run_id: str) -> bool:
        """A queued run: wait until the session is free and it is the oldest waiting."""
        while True:
            if await self.runs.start_queued(run_id):
                return True
            run = await self.runs.get(run_id)
            if run is None or run.ended:
                return False
            await anyio.sleep(_REMOTE_POLL_S)

    async def _write_events(
        self, run_id: str, receive: MemoryObjectReceiveStream[tuple[int, str, str]]
    ) -> None:
        async with receive:
            async for first in receive:
                batch = [first]
                while len(batch) < _PAGE:
                    try:
                        batch.append(receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                await _persist(
                    partial(self.runs.append, run_id, batch),
                    f"could not write {len(batch)} event(s) of run {run_id}",
                )
                self._notify(run_id)

    async def _finish(self, run_id: str, seq: int, outcome: _Outcome) -> None:
        end = outcome.end
        last: tuple[str, dict[str, object]]
        if end.status == "completed":
            last = ("run.completed", {"run_id": run_id, "output": end.output, "usage": outcome.usage})
        else:
            error = {"code": end.error_code, "message": end.error_message}
            last = ("run.failed", {"run_id": run_id, "error": error})
        events = [(seq, last[0], json.dumps(last[1], ensure_ascii=False))]
        await _persist(lambda: self.runs.append(run_id, events, end=end), f"could not end run {run_id}")
        self._notify(run_id)

    # ------------------------------------------------------------------ liveness

    async def _alive(self, worker: str) -> bool:
        return worker == self.id or await self.parts.liveness.alive(worker)

    async def _lost(self, run: RunRecord) -> bool:
        """Fail `run` as `worker_lost` if its worker is dead; True when it was (by us or anyone)."""
        if run.ended or run.worker == self.id or await self._alive(run.worker):
            return False
        await self.runs.fail_lost(
            run.id,
            code="worker_lost",
            message=f"the worker executing this run ({run.worker}) stopped; the input is kept, send the turn again",
        )
        self._notify(run.id)
        return True

    async def sweep_forever(self) -> None:
        """Fail runs of dead workers, honour cancels asked elsewhere, prune old events."""
        interval = min(1.0, self.config.storage.lease_wait_s / 3)
        while True:
            try:
                await self.sweep()
            except Exception:  # the store is down: try again next round
                log.exception("the serve sweep failed")
            await anyio.sleep(interval)

    async def sweep(self) -> None:
        """One round of `sweep_forever`."""
        verdicts: dict[str, bool] = {}
        for run in await self.runs.open_runs(exclude_worker=self.id):
            if run.worker not in verdicts:
                verdicts[run.worker] = await self._alive(run.worker)
            if not verdicts[run.worker]:
                await self._lost(run)
        for run_id in await self.runs.cancels_for(self.id):
            scope = self._scopes.get(run_id)
            if scope is not None:
                scope.cancel()
        now = time.time()
        if now - self._last_prune > _PRUNE_EVERY_S:
            self._last_prune = now
            await self.runs.prune(events_before=now - self.config.serve.events_retention)


@dataclass(frozen=True, slots=True)
class _Outcome:
    end: RunEnd
    usage: dict[str, int] | None = None


def _failure(exc: Exception) -> RunEnd:
    if isinstance(exc, ModelError):
        return RunEnd("failed", error_code="model_error", error_message=str(exc))
    if isinstance(exc, SessionBusyError):
        return RunEnd("failed", error_code="session_busy", error_message=str(exc))
    if isinstance(exc, SessionError):
        return RunEnd("failed", error_code="session_error", error_message=str(exc))
    log.error("run failed", exc_info=exc)
    return RunEnd("failed", error_code="internal_error", error_message=f"{type(exc).__name__}: {exc}")


async def _persist(write: Callable[[], Awaitable[object]], failed: str) -> None:
    """Run one run-store write, retried while the storage is unavailable (a pool exhausted under
    load, a server restarting: nothing was written) for `_WRITE_PATIENCE_S`; then logged.

    Dropping the write instead would lose a run's events, or leave it running forever."""
    delay, waited = 0.05, 0.0
    while True:
        try:
            await write()
            return
        except SessionStoreUnavailableError:
            if waited >= _WRITE_PATIENCE_S:
                log.exception("%s (the storage stayed unavailable for %.0f s)", failed, waited)
                return
        except Exception:  # a write the store refused: retrying cannot help
            log.exception(failed)
            return
        await anyio.sleep(delay)
        waited += delay
        delay = min(delay * 2, 2.0)
