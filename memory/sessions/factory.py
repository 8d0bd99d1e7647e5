"""`open_session_store`: the one place a session store is chosen and opened.

The only neutral module that imports the backends (the layering test holds the rest to it).

    async with open_session_store("sqlite", home=home) as store: ...
    async with open_session_store("postgres", url="postgresql://keel@db/keel") as store: ...

SQLite keeps `<home>/state.db`; PostgreSQL keeps its tables in `pg_schema` on the server
`url` names. There is no fallback: if the server cannot be used, opening fails with
`SessionStoreUnavailableError` and nothing is written anywhere else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from memory.sessions.contract import SessionReader, SessionStore
from memory.sessions.sqlite import STATE_DB_NAME, SessionDB

if TYPE_CHECKING:
    from memory.sessions.dense.contract import VectorStore

__all__ = ["SessionBackend", "open_session_store", "open_vectors", "session_store_location"]

SessionBackend: TypeAlias = Literal["sqlite", "postgres"]


def session_store_location(
    backend: SessionBackend, *, home: Path | None = None, url: str | None = None, pg_schema: str = "keel"
) -> str:
    """Where `open_session_store` with these arguments would keep sessions (passwords hidden)."""
    if backend == "postgres":
        from memory.sessions.postgres import PgTarget  # here: psycopg loads only for the postgres backend

        return PgTarget(_need_url(url), pg_schema).shown
    return str(_need_home(home) / STATE_DB_NAME)


def _need_url(url: str | None) -> str:
    if not url:
        raise ValueError(
            "the postgres backend needs a URL (sessions.url: postgresql://USER@HOST:PORT/DATABASE)"
        )
    return url


def _need_home(home: Path | None) -> Path:
    if home is None:
        raise ValueError("the sqlite backend needs the keel home (its state.db lives there)")
    return home


@asynccontextmanager
async def open_session_store(
    backend: SessionBackend = "sqlite",
    *,
    home: Path | None = None,
    url: str | None = None,
    pg_schema: str = "keel",
    pool_size: int = 4,
    connect_timeout_s: float = 10.0,
    lock_timeout_s: float = 10.0,
) -> AsyncIterator[SessionStore]:
    """Open the configured session store; close it on exit.

    Args:
        backend: `sqlite` (`<home>/state.db`) or `postgres` (`url`, schema `pg_schema`).
        home: the keel home (sqlite).
        url: `postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE` (postgres).
        pg_schema: the PostgreSQL schema holding keel's tables, created if missing.
        pool_size: PostgreSQL connections kept at most.
        connect_timeout_s: how long to wait for the PostgreSQL server.
        lock_timeout_s: how long a PostgreSQL statement waits for another client's lock.

    Raises:
        ValueError: a required argument for the backend is missing.
        SessionStoreError: the store cannot be opened (`SessionStoreUnavailableError` when
            the server cannot be reached or refuses the login; the message says what to do).
    """
    store: SessionStore
    if backend == "postgres":
        from memory.sessions.postgres import PgSessionStore

        store = await PgSessionStore.open(
            _need_url(url),
            schema=pg_schema,
            pool_size=pool_size,
            connect_timeout_s=connect_timeout_s,
            lock_timeout_s=lock_timeout_s,
        )
    elif backend == "sqlite":
        store = await SessionDB.open(_need_home(home) / STATE_DB_NAME)
    else:
        raise ValueError(f"session backend {backend!r} is unknown; use 'sqlite' or 'postgres'")
    try:
        yield store
    finally:
        await store.aclose()


def open_vectors(store: SessionReader) -> VectorStore | None:
    """The message-vector table beside `store`'s messages (nothing is opened until first use),
    or None for a store keel did not open itself (a test double, a wrapper)."""
    if isinstance(store, SessionDB):
        from memory.sessions.sqlite import SqliteVectors  # here: the vector tables load numpy

        return SqliteVectors(store.path)
    from memory.sessions.postgres import PgSessionStore, PgVectors

    if isinstance(store, PgSessionStore):
        return PgVectors(store.target)
    return None
