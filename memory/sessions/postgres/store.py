"""`PgSessionStore`: the session store on a PostgreSQL server (psycopg 3, async, pooled).

The same contract (`SessionStore`) and the same records as `SessionDB`, for homes that
outgrow one machine: several keel processes on several hosts share one database. Tables
live in one schema (default `keel`), created and migrated on open; nothing is written
anywhere else. Search uses a `tsvector` GIN index and `pg_trgm` (see `_search.py` for
where ranking differs from SQLite).

Each call runs in one transaction on a pooled connection. A cancelled caller does not
tear a transaction in half: the call is shielded, finishes (or rolls back), then the
cancellation is delivered — as on SQLite, where the worker thread finishes first.

    async with await PgSessionStore.open("postgresql://keel@db:5432/keel") as store:
        await store.create_session("s1", source="cli", started_at=time.time(), user_id="alice")
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

import anyio
import psycopg
import psycopg_pool

from memory.errors import SessionStoreError
from memory.sessions._records import (
    AnchoredView,
    FlushRecord,
    IndexFeatures,
    MessageRecord,
    SearchResult,
    SessionRecord,
)
from memory.sessions.contract import SessionStore
from memory.sessions.postgres import _sql as _pg_sql
from memory.sessions.postgres._conn import DEFAULT_LOCK_TIMEOUT_S, PgTarget, connect, open_pool, translate
from memory.sessions.postgres._schema import migrate_pg
from memory.sessions.postgres._search import search_messages_pg
from memory.sessions.postgres._sql import Conn, pg_text
from memory.sessions.postgres._stats import TermStatsCache
from memory.sessions.reads import ListSessions, SearchMessages, SelectMessages
from memory.sessions.writes import SessionWrite, WriteResult, current_fence

__all__ = ["PgSessionStore"]

T = TypeVar("T")

Pool = psycopg_pool.AsyncConnectionPool[Conn]


async def migrate_schema(
    url: str, *, schema: str = "keel", connect_timeout_s: float = 10.0, trigram: bool | None = None
) -> IndexFeatures:
    """Create and migrate keel's `schema` on `url` as needed (one short connection).

    Every store of the schema relies on it: `PgSessionStore.open` runs it, and so does a
    command that opens only the other stores (`keel memory` on `storage.backend: postgres`).

    Raises:
        SessionStoreUnavailableError: bad URL, server down, login or database refused.
        SessionSchemaError: the schema was written by a newer keel.
    """
    features, _ = await _prepare(PgTarget(url, schema), connect_timeout_s, trigram)
    return features


async def _prepare(target: PgTarget, timeout_s: float, trigram: bool | None) -> tuple[IndexFeatures, str]:
    """Migrate the schema and ask the server who it is, on one short connection."""
    conn = await connect(target, search_path=f'"{target.schema}"', timeout_s=timeout_s)
    try:
        with anyio.CancelScope(shield=True):
            features = await migrate_pg(conn, target.schema, trigram=trigram)
            identity = await _pg_sql.server_identity(conn)
    except psycopg.Error as exc:
        raise translate(exc, target) from exc
    finally:
        with anyio.CancelScope(shield=True):
            await conn.close()
    return features, f"{identity} schema {target.schema}"


class PgSessionStore(SessionStore):
    """The session store on PostgreSQL. Open it with `PgSessionStore.open` (or `open_session_store`).

    Errors are `SessionStoreError` subclasses; a server that cannot be reached (or refuses
    the login) is `SessionStoreUnavailableError`, whose message names the URL without
    its password. Invalid arguments raise `ValueError` before anything is sent.
    """

    def __init__(self, pool: Pool, target: PgTarget, features: IndexFeatures, identity: str) -> None:
        # Use `PgSessionStore.open`: the schema must exist and be migrated first.
        self._pool = pool
        self._target = target
        self._features = features
        self._identity = identity
        self._term_stats = TermStatsCache()
        self._closed = False

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        schema: str = "keel",
        pool_size: int = 4,
        connect_timeout_s: float = 10.0,
        trigram: bool | None = None,
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    ) -> PgSessionStore:
        """Connect, create and migrate `schema` as needed, and open a connection pool.

        Args:
            url: `postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE` (libpq URL; the usual
                `PG*` environment variables fill in what it leaves out).
            schema: the schema holding keel's tables (lower-case letters, digits, `_`).
            pool_size: connections kept at most; calls beyond it wait for one.
            connect_timeout_s: how long to wait for the server (and for a free connection).
            trigram: use `pg_trgm` for substring search (None: when available).
            lock_timeout_s: how long a statement waits for a lock another client holds; past
                it the call fails with `SessionStoreBusyError` (the turn loop journals the write).

        Raises:
            SessionStoreUnavailableError: bad URL, server down, login or database refused.
            SessionSchemaError: the schema was written by a newer keel.
        """
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {pool_size!r}")
        target = PgTarget(url, schema)
        features, identity = await _prepare(target, connect_timeout_s, trigram)
        pool = await open_pool(
            target, size=pool_size, timeout_s=connect_timeout_s, lock_timeout_s=lock_timeout_s
        )
        return cls(pool, target, features, identity)

    @property
    def location(self) -> str:
        """The URL without its password, and the schema."""
        return self._target.shown

    @property
    def identity(self) -> str:
        """The server's system identifier, the database and the schema: the same store
        whatever the URL's spelling (`127.0.0.1` or `localhost`), what a journal names."""
        return self._identity

    @property
    def schema(self) -> str:
        """The schema holding the tables."""
        return self._target.schema

    @property
    def target(self) -> PgTarget:
        """The server and schema (for `open_vectors`, which keeps its own small pool)."""
        return self._target

    @property
    def features(self) -> IndexFeatures:
        """`fts` is always there; `trigram` when `pg_trgm` is installed."""
        return self._features

    async def _tx(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        if self._closed:
            raise SessionStoreError(f"the session store {self.location!r} is closed; open it again")
        with anyio.CancelScope(shield=True):
            result = await self._call(fn)
        return result

    async def _write(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """A write transaction; under a fence (`contract.fenced`) it first checks the fence."""
        fence = current_fence()
        if fence is None:
            return await self._tx(fn)

        async def checked(conn: Conn) -> T:
            await _pg_sql.check_fence(conn, fence)
            return await fn(conn)

        return await self._tx(checked)

    async def _call(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            async with self._pool.connection() as conn:
                return await fn(conn)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise translate(exc, self._target) from exc

    async def aclose(self) -> None:
        """Close the pool once the calls already running have finished."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self._pool.close()

    # ------------------------------------------------------------------ writes

    async def apply(self, write: SessionWrite) -> WriteResult:
        """Run one write (`memory.sessions.writes`) in one transaction, checking the fence it
        is made under. The keyword methods (`create_session`, ...) come from `SessionWriter`."""
        return await self._write(partial(_pg_sql.apply, write=write))

    # ------------------------------------------------------------------ reads

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None."""
        return await self._tx(lambda c: _pg_sql.get_session(c, pg_text(session_id)))

    async def select_sessions(self, query: ListSessions) -> list[SessionRecord]:
        """Sessions newest first (see `ListSessions`)."""
        return await self._tx(lambda c: _pg_sql.list_sessions(c, query))

    async def select_messages(self, query: SelectMessages) -> list[MessageRecord]:
        """A session's messages in order (see `SelectMessages`)."""
        return await self._tx(lambda c: _pg_sql.get_messages(c, query))

    async def get_message(self, message_id: int) -> MessageRecord | None:
        """One message by id, or None."""
        return await self._tx(lambda c: _pg_sql.get_message(c, message_id))

    async def anchored_views(
        self, message_ids: Sequence[int], *, window: int = 5, bookend: int = 3
    ) -> list[AnchoredView | None]:
        """`anchored_view` for several messages in one transaction."""
        ids = tuple(message_ids)
        return await self._tx(lambda c: _pg_sql.anchored_views(c, ids, window=window, bookend=bookend))

    async def list_flushes(self, session_id: str) -> list[FlushRecord]:
        """A session's flush records, oldest first."""
        return await self._tx(lambda c: _pg_sql.list_flushes(c, pg_text(session_id)))

    async def continuation(self, session_id: str) -> str | None:
        """The session a compression continued `session_id` in (its newest child), or None."""
        return await self._tx(lambda c: _pg_sql.continuation(c, pg_text(session_id)))

    async def lineage_roots(self, session_ids: Sequence[str]) -> dict[str, str]:
        """`lineage_root` for many sessions in one query."""
        ids = tuple(session_ids)
        if any("\x00" in i for i in ids):
            mapped = {i: pg_text(i) for i in ids}
            roots = await self._tx(lambda c: _pg_sql.lineage_roots(c, list(mapped.values())))
            return {i: roots[mapped[i]] for i in ids}
        return await self._tx(lambda c: _pg_sql.lineage_roots(c, ids))

    async def search_messages(self, query: SearchMessages) -> SearchResult:
        """Messages matching the query, best first (see `SearchMessages`; the ranking differs
        from SQLite's: `_search.py`)."""
        features, stats = self._features, self._term_stats
        return await self._tx(lambda c: search_messages_pg(c, query, features=features, stats=stats))
