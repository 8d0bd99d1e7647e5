"""Group commit: the writes that concurrent sessions make to one `state.db` share transactions.

One process can run a thousand sessions over one connection. Written one by one, every
message costs a worker-thread hop and a commit, and the writes queue behind each other on
the connection's single thread. Here the first writer that finds no batch in flight leads:
it takes every write queued so far and runs them in one worker-thread call, in one
`BEGIN IMMEDIATE` transaction, each write in its own savepoint (`SqliteConnection.write_each`),
so one write's failure is that caller's error alone. Writers that arrive meanwhile queue
for the next batch, which one of them leads once this one has committed.

A caller returns only after the commit that holds its write — an acknowledged write is as
durable as before, and each caller sees its own result or error. A caller cancelled while
its write is still queued takes it back out (nothing is written); once its batch is running
the batch completes (a worker thread cannot be interrupted), as with a single write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar, cast

import anyio
import anyio.lowlevel

from memory._sqlite import Outcome, SqliteConnection
from memory.errors import SessionStoreError

__all__ = ["GroupCommit"]

T = TypeVar("T")


@dataclass(eq=False, slots=True)
class _Pending:
    fn: Callable[[sqlite3.Connection], object]
    outcome: Outcome | None = None
    failure: BaseException | None = None
    """The batch as a whole failed (the lock, the commit, a closed store)."""


class GroupCommit:
    """Batches concurrent writes on one connection into shared transactions."""

    def __init__(
        self,
        conn: SqliteConnection,
        run: Callable[[Callable[[], list[Outcome]]], Awaitable[list[Outcome]]],
        *,
        finish: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """`run` executes a blocking call on the connection's one worker thread; `finish` runs
        at the end of every batch, inside its transaction (the full-text indexing of its rows)."""
        self._conn = conn
        self._run = run
        self._finish = finish
        self._queue: list[_Pending] = []
        self._leading = False
        self._batch_done = anyio.Event()
        self.batches = 0
        """Transactions committed (or attempted) so far; writes / batches is the grouping."""

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` inside a shared write transaction; return its value once committed.

        Raises:
            Exception: what `fn` raised (translated when it was an `sqlite3` error), or the
                error that failed the whole batch.
        """
        op = _Pending(fn)
        self._queue.append(op)
        try:
            while op.outcome is None and op.failure is None:
                if self._leading:
                    await self._batch_done.wait()
                else:
                    await self._lead()
        except BaseException:
            if op in self._queue:  # still waiting: withdraw it, nothing was written
                self._queue.remove(op)
            raise
        if op.failure is not None:
            raise op.failure
        outcome = cast(Outcome, op.outcome)
        if outcome.error is not None:
            raise outcome.error
        return cast(T, outcome.value)

    async def _lead(self) -> None:
        self._leading = True
        batch: list[_Pending] = []
        try:
            # One turn of the event loop first: writers that are ready to run queue their
            # writes and ride along, instead of each leading a batch of its own.
            await anyio.lowlevel.cancel_shielded_checkpoint()
            batch, self._queue = self._queue, []
            # Shielded: the batch holds other callers' writes, which must not be lost
            # because this caller was cancelled.
            with anyio.CancelScope(shield=True):
                try:
                    outcomes = await self._run(
                        lambda: self._conn.write_each([op.fn for op in batch], then=self._finish)
                    )
                except Exception as exc:
                    for op in batch:
                        op.failure = exc
                else:
                    for op, outcome in zip(batch, outcomes, strict=True):
                        op.outcome = outcome
        finally:
            for op in batch:
                if op.outcome is None and op.failure is None:  # interrupted by a BaseException
                    op.failure = SessionStoreError("the write was interrupted before it committed; retry it")
            self.batches += 1
            self._leading = False
            done, self._batch_done = self._batch_done, anyio.Event()
            done.set()
