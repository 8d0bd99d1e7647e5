"""`PgLease`: a PostgreSQL session-level advisory lock per session, on one connection per process.

The key is 64 bits of SHA-256 over the schema and the session id, so two keel schemas on one
server never share a lease. The lock is taken with `pg_try_advisory_lock`, polled until the
deadline: a blocking `pg_advisory_lock` would hold the one connection hostage while it
waits, and every other session of the process needs it. The lock belongs to the connection,
so a worker that is killed (or loses the network) frees every lease it held when the server
notices the connection is gone; nothing needs cleaning up.

A connection that broke is replaced at the next `hold`. A lease held while its connection
broke is lost with it (the server freed it), and the holder is not told mid-turn. So every
lease is fenced: taking it bumps the lineage's token in `session_fences` (on the same
connection, right after the lock), the holder's task writes under `Fence(lineage, token)`
(`memory.sessions.contract.fenced`), and the session store refuses a write whose token is
no longer the newest. A worker that lost its lease to another therefore stops writing
instead of landing its turn behind the other's. (A schema keel has not migrated to fences
yet leaves the lease unfenced, as before.)
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import psycopg
import psycopg.errors
from psycopg.rows import TupleRow

from memory.errors import SessionStoreUnavailableError
from memory.lease.contract import LocalGate, busy
from memory.sessions.writes import Fence, fenced

__all__ = ["PgLease", "lease_key"]


def lease_key(schema: str, session_id: str) -> int:
    """The advisory-lock key (a signed 64-bit integer) of `session_id` in `schema`."""
    digest = hashlib.sha256(f"keel-lease\0{schema}\0{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PgLease:
    """Session leases on the PostgreSQL server `url`, for the keel schema `schema`.

    Args:
        url: the libpq URL (the one the stores use).
        schema: the keel schema (part of the key).
        wait_s: how long `hold` waits for a busy session before `SessionBusyError`.
        poll_s: how often a waiter retries the lock.
        connect_timeout_s: how long to wait for the server.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str,
        wait_s: float = 30.0,
        poll_s: float = 0.02,
        connect_timeout_s: float = 10.0,
    ) -> None:
        self._url = url
        self._schema = schema
        self.wait_s = wait_s
        self._poll_s = poll_s
        self._connect_timeout_s = connect_timeout_s
        self._conn: psycopg.AsyncConnection[TupleRow] | None = None
        self._gate = LocalGate()
        self._connecting = anyio.Lock()
        self.holder = uuid.uuid4().hex
        """This lease object's id in `session_fences` (one per process, like the connection)."""

    async def _connection(self) -> psycopg.AsyncConnection[TupleRow]:
        async with self._connecting:
            if self._conn is None or self._conn.closed or self._conn.broken:
                try:
                    self._conn = await psycopg.AsyncConnection.connect(
                        self._url, autocommit=True, connect_timeout=max(1, round(self._connect_timeout_s))
                    )
                except psycopg.Error as exc:
                    raise SessionStoreUnavailableError(
                        f"cannot take a session lease: the PostgreSQL server does not answer ({exc}); "
                        "check that it runs (storage.url)"
                    ) from exc
            return self._conn

    async def _try(self, key: int) -> bool:
        conn = await self._connection()
        try:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            row = await cur.fetchone()
        except psycopg.OperationalError as exc:
            raise SessionStoreUnavailableError(
                f"cannot take a session lease: the PostgreSQL server connection failed ({exc}); retry when it is back"
            ) from exc
        return bool(row and row[0])

    async def _bump(self, session_id: str) -> Fence | None:
        """The lineage's next fence token (None: the schema has no fences yet)."""
        conn = await self._connection()
        t = f'"{self._schema}".session_fences'
        try:
            # `held_from`: the first token of the holder's current run (its earlier writes stay good).
            cur = await conn.execute(
                f"INSERT INTO {t} (lineage, token, holder, held_from) VALUES (%s, 1, %s, 1) "
                f"ON CONFLICT (lineage) DO UPDATE SET token = {t}.token + 1, held_from = CASE "
                f"WHEN {t}.holder = excluded.holder THEN {t}.held_from ELSE {t}.token + 1 END, "
                "holder = excluded.holder RETURNING token",
                (session_id, self.holder),
            )
            row = await cur.fetchone()
        except psycopg.errors.UndefinedTable:
            return None
        except psycopg.OperationalError as exc:
            raise SessionStoreUnavailableError(
                f"cannot take a session lease: the PostgreSQL server connection failed ({exc}); retry when it is back"
            ) from exc
        assert row is not None  # RETURNING always gives the row
        return Fence(session_id, int(row[0]), self.holder)

    async def _release(self, key: int) -> None:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return  # the server freed it with the connection
        try:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except psycopg.OperationalError:
            return  # gone with the connection

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[int | None]:
        key = lease_key(self._schema, session_id)
        async with AsyncExitStack() as stack:
            got = False
            with anyio.move_on_after(self.wait_s):
                await stack.enter_async_context(self._gate.hold(session_id))
                while True:  # polled, never blocking: the one connection serves every session
                    # Shielded: a deadline that lands mid-query would make psycopg close the
                    # one connection, and with it every other lease this process holds. The
                    # wait ends at the sleep instead; a lock the query did take is kept.
                    with anyio.CancelScope(shield=True):
                        got = await self._try(key)
                    if got:
                        break
                    await anyio.sleep(self._poll_s * (0.5 + random.random()))
            if not got:
                raise busy(session_id, self.wait_s)
            try:
                fence = await self._bump(session_id)
                with fenced(fence):
                    yield None if fence is None else fence.token  # the token is the generation
            finally:
                with anyio.CancelScope(shield=True):
                    await self._release(key)

    async def aclose(self) -> None:
        """Close the lease connection (every lease it held is freed)."""
        if self._conn is not None:
            with anyio.CancelScope(shield=True):
                await self._conn.close()
            self._conn = None
