"""`SqliteRunDb`: the run store in `<home>/serve.db` (the files backend).

One connection, used from worker threads one transaction at a time (a `CapacityLimiter(1)`);
every transaction starts with `BEGIN IMMEDIATE`, so two `keel serve` processes on one home
serialize on SQLite's lock (waiting up to the busy timeout) and one session's admission is
atomic across them. `sqlite3` errors leave as `SessionStoreError`s (`memory._sqlite.translate`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from memory._migrations import migrate_sqlite
from memory._sqlite import translate
from memory.errors import SessionSchemaError
from memory.runs._schema import MIGRATIONS
from memory.runs.contract import Row

__all__ = ["SERVE_DB_NAME", "SqliteRunDb"]

SERVE_DB_NAME = "serve.db"
_BUSY_TIMEOUT_S = 10.0
T = TypeVar("T")


def _too_new(path: Path) -> Callable[[int, int], Exception]:
    def error(found: int, known: int) -> Exception:
        return SessionSchemaError(
            f"{str(path)!r} is at run-store version {found}, newer than this keel knows ({known}); upgrade keel"
        )

    return error


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            migrate_sqlite(conn, MIGRATIONS, too_new=_too_new(path))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


class _SqliteTx:
    def __init__(self, db: SqliteRunDb) -> None:
        self._db = db

    async def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        conn = self._db.conn
        return await self._db.call(lambda: [tuple(r) for r in conn.execute(sql, tuple(params)).fetchall()])

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        conn = self._db.conn
        return await self._db.call(lambda: conn.execute(sql, tuple(params)).rowcount)

    async def run_many(self, sql: str, params: Sequence[Sequence[object]]) -> None:
        conn = self._db.conn
        await self._db.call(lambda: conn.executemany(sql, [tuple(p) for p in params]))


class SqliteRunDb:
    """The run tables in one SQLite file; open with `await SqliteRunDb.open(path)`."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._limiter = anyio.CapacityLimiter(1)

    @classmethod
    async def open(cls, path: Path) -> SqliteRunDb:
        """Open (creating and migrating) `path`.

        Raises:
            SessionStoreError: the file cannot be opened, or was written by a newer keel.
        """
        try:
            conn = await anyio.to_thread.run_sync(_connect, path)  # blocking: open + migrate
        except sqlite3.Error as exc:
            raise translate(exc, path) from exc
        return cls(conn, path)

    @property
    def location(self) -> str:
        return str(self.path)

    async def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the connection in a worker thread (blocking SQLite), errors translated."""
        try:
            return await anyio.to_thread.run_sync(fn)  # blocking: sqlite3
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_SqliteTx]:
        async with self._limiter:
            await self.call(lambda: self.conn.execute("BEGIN IMMEDIATE"))
            try:
                yield _SqliteTx(self)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self.call(lambda: self.conn.execute("ROLLBACK"))
                raise
            with anyio.CancelScope(shield=True):
                await self.call(lambda: self.conn.execute("COMMIT"))

    async def aclose(self) -> None:
        async with self._limiter:
            await anyio.to_thread.run_sync(self.conn.close)  # blocking: close
