"""`PgRunDb`: the run store as tables of the keel schema on PostgreSQL.

A small pool of its own (every connection with the schema alone on its `search_path`); the
tables are created by the project's migration runner under an advisory lock, so workers
starting together apply each migration once, and keep their versions in `serve_migrations`.
Statements are written with `?` (shared with SQLite) and sent with `%s`. psycopg errors
leave as `SessionStoreError`s (`SessionStoreUnavailableError` when the server is the problem).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

import anyio
import psycopg
import psycopg_pool
from psycopg.rows import TupleRow

from memory._migrations import migrate_postgres
from memory.errors import SessionSchemaError, SessionStoreError, SessionStoreUnavailableError
from memory.pgpool import PoolRecipe, async_pool
from memory.runs._schema import MIGRATIONS, VERSIONS_TABLE
from memory.runs.contract import Row
from memory.sessions import redact_url

__all__ = ["PgRunDb"]

_LOCK_KEY = int.from_bytes(hashlib.sha256(b"keel-serve-runs-migrate").digest()[:8], "big", signed=True)
Conn = psycopg.AsyncConnection[TupleRow]


def _sql(statement: str) -> str:
    return statement.replace("?", "%s")


def _error(exc: BaseException, shown: str) -> SessionStoreError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, psycopg.OperationalError | psycopg_pool.PoolTimeout):
        return SessionStoreUnavailableError(
            f"the run store on {shown} cannot be used ({first}); check that the PostgreSQL server runs "
            "(storage.url)"
        )
    return SessionStoreError(f"the run store on {shown} refused a statement ({first})")


def _too_new(schema: str) -> Callable[[int, int], Exception]:
    def error(found: int, known: int) -> Exception:
        return SessionSchemaError(
            f"schema {schema!r} holds run tables at version {found}, newer than this keel knows ({known}); "
            "upgrade keel"
        )

    return error


class _PgTx:
    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    async def rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        cur = await self._conn.execute(_sql(sql), tuple(params))
        return [tuple(r) for r in await cur.fetchall()] if cur.description else []

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        cur = await self._conn.execute(_sql(sql), tuple(params))
        return max(cur.rowcount, 0)

    async def run_many(self, sql: str, params: Sequence[Sequence[object]]) -> None:
        async with self._conn.cursor() as cur:
            await cur.executemany(_sql(sql), [tuple(p) for p in params])


class PgRunDb:
    """The run tables in `schema` on the server `url`; open with `await PgRunDb.open(...)`."""

    def __init__(self, pool: psycopg_pool.AsyncConnectionPool[Conn], shown: str) -> None:
        self._pool = pool
        self._shown = shown

    @classmethod
    async def open(
        cls, url: str, *, schema: str, pool_size: int = 4, connect_timeout_s: float = 10.0
    ) -> PgRunDb:
        """Connect, create the schema's run tables if missing, and keep a pool.

        Raises:
            SessionStoreUnavailableError: the server cannot be reached.
            SessionSchemaError: the tables were written by a newer keel.
        """
        shown = f"{redact_url(url)} (schema {schema})"
        timeout = max(1, round(connect_timeout_s))
        options = f'-c search_path="{schema}" -c client_min_messages=warning'
        try:
            conn = await psycopg.AsyncConnection.connect(url, options=options, connect_timeout=timeout)
            async with conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                await migrate_postgres(conn, MIGRATIONS, too_new=_too_new(schema), table=VERSIONS_TABLE)
            pool = async_pool(
                PoolRecipe(url=url, store="serve", schema=schema, size=pool_size, timeout_s=connect_timeout_s)
            )
            await pool.open(wait=True, timeout=connect_timeout_s)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise _error(exc, shown) from exc
        return cls(pool, shown)

    @property
    def location(self) -> str:
        return self._shown

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_PgTx]:
        # Shielded: a query cancelled halfway (a client hanging up) would cost the pool its
        # connection; every transaction here is a few short statements.
        try:
            with anyio.CancelScope(shield=True):
                async with self._pool.connection() as conn, conn.transaction():
                    yield _PgTx(conn)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise _error(exc, self._shown) from exc

    async def aclose(self) -> None:
        await self._pool.close()
