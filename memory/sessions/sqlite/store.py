"""`SessionDB`: the episodic session store in `<home>/state.db` (SQLite, WAL, FTS5).

Every session and every message is kept: sessions with their lineage (`parent_session_id`:
a compression continues in a child session), messages appended one by one as they happen,
token counters, and the memory-flush log. Full-text indexes make all of it searchable.
It implements `SessionStore` (`contract.py`); `PgSessionStore` is its PostgreSQL twin,
and `open_session_store` chooses between them.

All SQLite work runs in worker threads (`anyio.to_thread.run_sync`), one call at a time
per `SessionDB` (a `CapacityLimiter(1)`), never on the event loop. A cancelled caller
does not tear a transaction in half: the worker finishes or rolls back, then the
cancellation is delivered.

    async with open_session_db(home / "state.db") as db:
        await db.create_session("s1", source="cli", model="gpt-5", started_at=time.time())
        await db.append_message("s1", StoredMessage(role="user", content="hi", timestamp=time.time()))
        hits = await db.search("deploy script")
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from memory._sqlite import LockRetryPolicy, SqliteConnection
from memory.errors import SessionStoreError
from memory.sessions import _records
from memory.sessions.contract import SessionStore
from memory.sessions.reads import ListSessions, SearchMessages, SelectMessages
from memory.sessions.sqlite import _search, _sql
from memory.sessions.sqlite._group import GroupCommit
from memory.sessions.sqlite._schema import index_new_messages, migrate, probe_features, reconcile_indexes
from memory.sessions.writes import SessionWrite, WriteResult

__all__ = ["STATE_DB_NAME", "SessionDB", "open_session_db"]

T = TypeVar("T")

STATE_DB_NAME = "state.db"
"""The session store's file name inside the keel home."""


def _open_connection(
    path: Path, *, fts: bool | None, trigram: bool | None, retry: LockRetryPolicy
) -> tuple[SqliteConnection, _records.IndexFeatures]:
    """Connect, migrate and reconcile the indexes (blocking: run it in a worker thread)."""
    available = probe_features()
    if fts and not available.fts:
        raise SessionStoreError("this SQLite build has no FTS5; open with fts=None or fts=False")
    if trigram and not available.trigram:
        raise SessionStoreError(
            "this SQLite build has no trigram tokenizer (needs 3.34+); open with trigram=None"
        )
    use_fts = available.fts if fts is None else fts
    wanted = _records.IndexFeatures(
        fts=use_fts, trigram=use_fts and (available.trigram if trigram is None else trigram)
    )
    conn = SqliteConnection.connect(path, retry=retry)
    try:
        features = conn.write(lambda c: (migrate(c), reconcile_indexes(c, wanted))[1])
        if features.fts:
            conn.autocommit(_search.prepare_connection)
    except BaseException:
        conn.close()
        raise
    return conn, features


class SessionDB(SessionStore):
    """The session store. Open it with `SessionDB.open` or `open_session_db`.

    Methods are coroutines; each runs one SQLite transaction in a worker thread. Errors
    are `SessionStoreError` subclasses (`memory.errors`); invalid arguments
    (an unknown role, an empty id) raise `ValueError` before anything is written.
    """

    def __init__(self, conn: SqliteConnection, features: _records.IndexFeatures) -> None:
        # Use `SessionDB.open`: the connection must exist and be migrated first.
        self._conn = conn
        self._features = features
        self._limiter = anyio.CapacityLimiter(1)
        self._closed = False
        self._group = GroupCommit(conn, self._run, finish=lambda c: index_new_messages(c, features))

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        fts: bool | None = None,
        trigram: bool | None = None,
        retry: LockRetryPolicy | None = None,
    ) -> SessionDB:
        """Open (creating and migrating as needed) the store at `path`.

        Args:
            path: the database file, normally `<home>/state.db`.
            fts: use FTS5 full-text indexes. None detects it; False searches with LIKE
                (and drops index triggers, so the next FTS-capable open rebuilds them);
                True fails if this SQLite lacks FTS5.
            trigram: the same for the trigram index (CJK and substring search).
            retry: busy timeout and retries while another process writes.

        Raises:
            SessionStoreError: the file cannot be opened, is not a database, is newer
                than this code, or `fts=True` was asked of a SQLite without FTS5.
        """
        policy = retry or LockRetryPolicy()
        conn, features = await anyio.to_thread.run_sync(
            lambda: _open_connection(path, fts=fts, trigram=trigram, retry=policy)
        )
        return cls(conn, features)

    @property
    def path(self) -> Path:
        """The database file."""
        return self._conn.path

    @property
    def location(self) -> str:
        """The database file, as text (the `SessionStore` protocol's name for where it lives)."""
        return str(self._conn.path)

    @property
    def identity(self) -> str:
        """The database file's resolved path: what a journal names (see `SessionStore.identity`)."""
        return f"sqlite {self._conn.path.resolve()}"

    @property
    def write_batches(self) -> int:
        """Write transactions run so far (concurrent writes share them: see `_group`)."""
        return self._group.batches

    @property
    def features(self) -> _records.IndexFeatures:
        """The full-text indexes this connection searches with (`fts`, `trigram`)."""
        return self._features

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise SessionStoreError(f"the session store {str(self.path)!r} is closed; open it again")
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter)

    async def aclose(self) -> None:
        """Close the connection once the calls already queued have finished."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._conn.close, limiter=self._limiter)

    # ------------------------------------------------------------------ writes

    async def apply(self, write: SessionWrite) -> WriteResult:
        """Run one write (`memory.sessions.writes`); concurrent writes share a transaction
        (group commit), each caller sees only its own error. The keyword methods
        (`create_session`, `append_message`, ...) come from `SessionWriter`."""
        return await self._group.write(partial(_sql.apply, write=write))

    # ------------------------------------------------------------------ reads

    async def get_session(self, session_id: str) -> _records.SessionRecord | None:
        """The session, or None if there is none with that id."""
        return await self._run(lambda: self._conn.read(lambda c: _sql.get_session(c, session_id)))

    async def select_sessions(self, query: ListSessions) -> list[_records.SessionRecord]:
        """Sessions newest first by start time or last activity (see `ListSessions`)."""
        return await self._run(lambda: self._conn.read(lambda c: _sql.list_sessions(c, query)))

    async def select_messages(self, query: SelectMessages) -> list[_records.MessageRecord]:
        """A session's messages in order (see `SelectMessages`)."""
        return await self._run(lambda: self._conn.read(lambda c: _sql.get_messages(c, query)))

    async def get_message(self, message_id: int) -> _records.MessageRecord | None:
        """One message by id, or None."""
        return await self._run(lambda: self._conn.read(lambda c: _sql.get_message(c, message_id)))

    async def anchored_views(
        self, message_ids: Sequence[int], *, window: int = 5, bookend: int = 3
    ) -> list[_records.AnchoredView | None]:
        """`anchored_view` for several messages in one call (None for an id that does not exist)."""
        ids = tuple(message_ids)
        return await self._run(
            lambda: self._conn.read(
                lambda c: [_sql.anchored_view(c, i, window=window, bookend=bookend) for i in ids]
            )
        )

    async def list_flushes(self, session_id: str) -> list[_records.FlushRecord]:
        """The flush records of a session, oldest first."""
        return await self._run(lambda: self._conn.read(lambda c: _sql.list_flushes(c, session_id)))

    async def lineage_roots(self, session_ids: Sequence[str]) -> dict[str, str]:
        """`lineage_root` for many sessions in one call."""
        ids = tuple(session_ids)
        return await self._run(lambda: self._conn.read(lambda c: _sql.lineage_roots(c, ids)))

    async def continuation(self, session_id: str) -> str | None:
        """The session a compression continued `session_id` in (its newest child), or None."""
        return await self._run(lambda: self._conn.read(lambda c: _sql.continuation(c, session_id)))

    async def search_messages(self, query: SearchMessages) -> _records.SearchResult:
        """Messages matching the query, best first (message level; no grouping): the query
        is sanitized first, so any text is accepted; a forced index this database lacks
        falls back to LIKE (see `SearchMessages`)."""
        features = self._features
        return await self._run(
            lambda: self._conn.read(lambda c: _search.search_messages(c, query, features=features))
        )


@asynccontextmanager
async def open_session_db(
    path: Path,
    *,
    fts: bool | None = None,
    trigram: bool | None = None,
    retry: LockRetryPolicy | None = None,
) -> AsyncIterator[SessionDB]:
    """`SessionDB.open` as an async context manager that closes the store on exit."""
    db = await SessionDB.open(path, fts=fts, trigram=trigram, retry=retry)
    try:
        yield db
    finally:
        await db.aclose()
