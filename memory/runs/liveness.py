"""Worker liveness: each `keel serve` process holds a lock while it lives; others test it.

A run records the worker executing it. When another worker finds that worker's lock free,
the worker is gone (the kernel or the PostgreSQL server dropped the lock with the process
or its connection) and its open runs can be failed. A test never waits and is never
cancelled halfway (a cancelled query would close the connection it runs on):

- `FileLiveness`: `<home>/leases/serve-worker-<id>.lock`, an fcntl record lock (one machine);
- `PgLiveness`: a session-level advisory lock held on a connection of its own; tested with
  `pg_try_advisory_lock` (and released at once) on a second connection.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Protocol

import anyio
import anyio.to_thread
import psycopg
from psycopg.rows import TupleRow

from memory.lease.files import try_lock, unlock  # the same record lock a session lease takes

__all__ = ["FileLiveness", "Liveness", "PgLiveness"]


class Liveness(Protocol):
    def hold(self, worker: str) -> AbstractAsyncContextManager[None]:
        """Hold `worker`'s lock for the block (the worker's whole life)."""
        ...

    async def alive(self, worker: str) -> bool:
        """Whether `worker` holds its lock now (True when that cannot be told)."""
        ...


# The liveness lock files this process holds. A record lock belongs to the process, so
# testing one of them here would succeed, then close a descriptor of the file and drop
# the lock: a worker of this process is answered from this set instead.
_HELD: set[Path] = set()


def _name(worker: str) -> str:
    return "serve-worker-" + "".join(c for c in worker if c.isalnum() or c in "-_")[:64]


class FileLiveness:
    """Liveness locks under `directory` (`<home>/leases`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @asynccontextmanager
    async def hold(self, worker: str) -> AsyncIterator[None]:
        path = self.directory / f"{_name(worker)}.lock"
        fd = await anyio.to_thread.run_sync(try_lock, path)  # blocking: open + lockf
        if fd is None:
            raise RuntimeError(f"worker id {worker!r} is already taken")
        _HELD.add(path)
        try:
            yield
        finally:
            _HELD.discard(path)
            unlock(fd)
            with contextlib.suppress(OSError):
                path.unlink()  # a free lock file left behind would only be tested again

    async def alive(self, worker: str) -> bool:
        path = self.directory / f"{_name(worker)}.lock"
        if path in _HELD:
            return True  # held by this process: probing it would release it

        def test() -> bool:
            if not path.exists():
                return False
            fd = try_lock(path)
            if fd is None:
                return True
            unlock(fd)
            return False

        with anyio.CancelScope(shield=True):
            held = await anyio.to_thread.run_sync(test)  # blocking: open + lockf
        return held


def _key(schema: str, worker: str) -> int:
    digest = hashlib.sha256(f"keel-serve-worker\0{schema}\0{worker}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PgLiveness:
    """Liveness locks as advisory locks on the PostgreSQL server `url`, for the keel schema."""

    def __init__(self, url: str, *, schema: str, connect_timeout_s: float = 10.0) -> None:
        self._url = url
        self._schema = schema
        self._timeout = max(1, round(connect_timeout_s))
        self._probe: psycopg.AsyncConnection[TupleRow] | None = None
        self._probing = anyio.Lock()

    async def _connect(self) -> psycopg.AsyncConnection[TupleRow]:
        return await psycopg.AsyncConnection.connect(
            self._url, autocommit=True, connect_timeout=self._timeout
        )

    @asynccontextmanager
    async def hold(self, worker: str) -> AsyncIterator[None]:
        conn = await self._connect()
        key = _key(self._schema, worker)
        try:
            await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            yield
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(psycopg.Error):  # unlocked now, not when the server
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))  # sees the close
                await conn.close()  # the lock goes with the connection in any case
                await self.aclose()

    async def aclose(self) -> None:
        """Close the connection `alive` tests on (reopened by the next test)."""
        if self._probe is not None:
            await self._probe.close()
            self._probe = None

    async def alive(self, worker: str) -> bool:
        key = _key(self._schema, worker)
        with anyio.CancelScope(shield=True):
            async with self._probing:
                try:
                    if self._probe is None or self._probe.closed or self._probe.broken:
                        self._probe = await self._connect()
                    cur = await self._probe.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                    row = await cur.fetchone()
                    if row and row[0]:
                        await self._probe.execute("SELECT pg_advisory_unlock(%s)", (key,))
                        return False
                except psycopg.Error:
                    return True  # cannot tell: never fail a run on a doubt
        return True
