"""The one place keel touches `sqlite3`: connect, transact, retry, translate.

Every SQLite store goes through here: the session store (`state.db`) and the holographic and
semantic provider stores. Each passes its own error translation (`translate` below for the session store), so
an `sqlite3` error always leaves as the store's own error type.

Synchronous by design: `SessionDB` calls these methods from worker threads through
`anyio.to_thread.run_sync` with a `CapacityLimiter(1)`, so one connection is never used by
two threads at once (`check_same_thread=False` is safe under that rule).

Writers take the lock up front with `BEGIN IMMEDIATE` (a deferred transaction that later
needs to write can fail with SQLITE_BUSY without ever calling the busy handler), wait up to
the busy timeout inside SQLite, and on `database is locked` retry the whole transaction a
few times with jittered backoff. Every `sqlite3` error leaving this module is translated
into the `SessionStoreError` tree, chained with `from`.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from memory.errors import (
    SessionConflictError,
    SessionNotFoundError,
    SessionQueryError,
    SessionStoreBusyError,
    SessionStoreCorruptError,
    SessionStoreError,
)

__all__ = ["LockRetryPolicy", "Outcome", "SqliteConnection", "Translate", "is_busy", "translate"]

T = TypeVar("T")

Translate = Callable[[sqlite3.Error, Path], Exception]
"""Turns an `sqlite3` error on the database at a path into the store's own error."""

_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_CORRUPT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


@dataclass(frozen=True, slots=True)
class Outcome:
    """One write of `SqliteConnection.write_each`: its value, or the error it alone raised."""

    ok: bool
    value: object
    error: Exception | None


@dataclass(frozen=True, slots=True)
class LockRetryPolicy:
    """How long to wait for another writer.

    Attributes:
        busy_timeout_s: SQLite's own wait per statement (`PRAGMA busy_timeout`).
        attempts: how many times a whole transaction is tried when it still finds the
            database locked.
        backoff_s: the first pause between attempts; it doubles (with jitter) up to 0.5 s.
    """

    busy_timeout_s: float = 1.0
    attempts: int = 10
    backoff_s: float = 0.02


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether `exc` says another connection holds the lock."""
    if _primary_code(exc) in _BUSY_CODES:
        return True
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


def translate(exc: sqlite3.Error, path: Path) -> SessionStoreError:
    """The `SessionStoreError` that stands for `exc` (the caller chains it `from exc`)."""
    code = _primary_code(exc)
    text = str(exc)
    if is_busy(exc):
        return SessionStoreBusyError(
            f"{str(path)!r} stayed locked by another writer ({text}); retry, or stop the other keel process"
        )
    if code in _CORRUPT_CODES or "malformed" in text or "not a database" in text:
        return SessionStoreCorruptError(
            f"{str(path)!r} is not a readable SQLite database ({text}); "
            "move it aside to start a fresh history"
        )
    if text.startswith("fts5:") or "unknown special query" in text or "no such column" in text:
        return SessionQueryError(f"the full-text index refused the query ({text})")
    if isinstance(exc, sqlite3.IntegrityError):
        if "UNIQUE constraint failed: sessions.id" in text:
            return SessionConflictError(f"a session with that id already exists ({text})")
        if "FOREIGN KEY" in text:
            return SessionNotFoundError(f"the referenced session does not exist ({text})")
    return SessionStoreError(f"state.db at {str(path)!r}: {text}")


class SqliteConnection:
    """A `sqlite3` connection with transaction helpers; use from one thread at a time."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        path: Path,
        retry: LockRetryPolicy,
        translate: Translate = translate,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._conn = conn
        self.path = path
        self._retry = retry
        self._translate = translate
        self._sleep = sleep
        self._rng = random.Random()

    @classmethod
    def connect(
        cls, path: Path, *, retry: LockRetryPolicy, translate: Translate = translate
    ) -> SqliteConnection:
        """Open (creating if needed) the database at `path` in WAL mode. Blocking."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                path, timeout=retry.busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise translate(exc, path) from exc
        self = cls(conn, path=path, retry=retry, translate=translate)
        try:
            self._with_retry(self._configure)
        except BaseException:
            conn.close()
            raise
        return self

    def _configure(self) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {int(self._retry.busy_timeout_s * 1000)}")
        # WAL: readers never block the writer. Where WAL cannot work (some network file
        # systems) SQLite keeps the rollback journal and answers with that mode instead.
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        # NORMAL in WAL loses at most the last commits on power failure, never integrity.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _restrict_permissions(self.path)

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in one `BEGIN IMMEDIATE` transaction, retried whole while locked."""

        def attempt() -> T:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._conn)
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            return result

        return self._with_retry(attempt)

    def write_each(
        self,
        fns: Sequence[Callable[[sqlite3.Connection], object]],
        *,
        then: Callable[[sqlite3.Connection], None] | None = None,
    ) -> list[Outcome]:
        """Run independent writes in one transaction, each in its own savepoint.

        One write's failure (a missing session, a constraint) rolls back that write only and
        is its own outcome; the others commit together. A lock past every retry, or a failed
        commit, raises for all of them (nothing was written). `then` runs after the writes,
        in the same transaction (outside their savepoints); if it raises, nothing is written.
        """

        def each(conn: sqlite3.Connection) -> list[Outcome]:
            outcomes: list[Outcome] = []
            for fn in fns:
                conn.execute("SAVEPOINT keel_op")
                try:
                    value = fn(conn)
                except sqlite3.Error as exc:
                    if is_busy(exc):
                        raise  # the whole transaction is retried
                    conn.execute("ROLLBACK TO keel_op")
                    error: Exception = self._translate(exc, self.path)
                    error.__cause__ = exc
                    outcomes.append(Outcome(ok=False, value=None, error=error))
                except Exception as exc:
                    conn.execute("ROLLBACK TO keel_op")
                    outcomes.append(Outcome(ok=False, value=None, error=exc))
                else:
                    outcomes.append(Outcome(ok=True, value=value, error=None))
                conn.execute("RELEASE keel_op")
            if then is not None:
                then(conn)
            return outcomes

        return self.write(each)

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in one read transaction (a consistent snapshot), retried while locked."""

        def attempt() -> T:
            self._conn.execute("BEGIN")
            try:
                return fn(self._conn)
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")

        return self._with_retry(attempt)

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        """The connection inside one transaction, for callers that cannot pass a function.

        A write takes the lock up front (`BEGIN IMMEDIATE`) and commits at the end; a read
        sees one consistent snapshot. Unlike `write`/`read` the body is not retried: a lock
        held past the busy timeout raises the translated error.
        """
        try:
            self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise self._translate(exc, self.path) from exc
        try:
            yield self._conn
            if write:
                self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise self._translate(exc, self.path) from exc
        except BaseException:
            self._rollback()
            raise
        finally:
            self._rollback()

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def autocommit(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` outside any transaction (schema work on the temp database), retried while locked."""
        return self._with_retry(lambda: fn(self._conn))

    def _with_retry(self, fn: Callable[[], T]) -> T:
        delay = self._retry.backoff_s
        for attempt in range(self._retry.attempts):
            try:
                return fn()
            except sqlite3.Error as exc:
                if not is_busy(exc) or attempt == self._retry.attempts - 1:
                    raise self._translate(exc, self.path) from exc
            self._sleep(delay * (0.5 + self._rng.random()))
            delay = min(delay * 2, 0.5)
        raise AssertionError("unreachable: the last attempt raises")  # pragma: no cover

    def close(self) -> None:
        """Close the connection. Blocking (a checkpoint may run)."""
        try:
            self._conn.close()
        except sqlite3.Error as exc:
            raise self._translate(exc, self.path) from exc


def _restrict_permissions(path: Path) -> None:
    # Both stores hold what the user said to the agent: owner-only.
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(f"{path}{suffix}")
        try:
            if candidate.exists() and candidate.stat().st_mode & 0o077:
                os.chmod(candidate, 0o600)
        except OSError:
            pass  # not ours to fix (another user's file, a read-only mount)
