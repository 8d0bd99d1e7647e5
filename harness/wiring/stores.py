"""`open_stores`: the one place every store of the configured backend is opened.

`storage.backend: files` (the default) keeps today's home: curated files, `state.db` (or the
`sessions:` server), the provider databases, file leases under `<home>/leases`.
`storage.backend: postgres` puts the session store, the curated documents, the skills, the
memory providers' facts and memories and the session lease on one PostgreSQL server and one
schema, so a worker needs no home beyond its config and caches:

    async with open_stores(config, home) as stores:
        store = curated_store(config, home, principal, backend=stores.curated(principal))

The stores are process-wide: a server opens them once and hands them to every session it
opens (`SessionOptions.stores`); `open_session` opens its own when it is given none. There
is no fallback: a server that cannot be used fails the open with a clear error.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import anyio.to_thread

from harness.config import KeelConfig
from memory import Principal, SessionStore, open_session_store
from memory.curated import CuratedBackend, HeldWrites, PendingWrites
from memory.lease import FileLease, SessionLease
from memory.pglog import routed_pg_logs
from memory.skills import SkillLibrary

# The PostgreSQL stores (and psycopg) are imported where the postgres backend is opened or
# used: the file-backed `keel memory` and `keel skills` commands never load the driver.
if TYPE_CHECKING:
    from memory.curated import CuratedPool
    from memory.providers import PgPlace

__all__ = ["MemoryPlace", "Stores", "curated_scopes", "open_place", "open_sessions", "open_stores"]


_LOG = logging.getLogger("keel.storage")


def _pool_warning(message: str) -> None:
    _LOG.warning("%s", message)


@asynccontextmanager
async def open_sessions(config: KeelConfig, home: Path) -> AsyncIterator[SessionStore]:
    """The session store `config.sessions` names, opened on entry and closed on exit.

    `open_stores` opens it with the rest; the `keel sessions` commands open it alone.
    psycopg's pool warnings become keel's messages (`memory.pglog`) on the `keel.storage`
    logger meanwhile.
    """
    s = config.sessions
    with routed_pg_logs(_pool_warning):
        async with open_session_store(
            s.backend,
            home=home,
            url=s.url,
            pg_schema=s.pg_schema,
            pool_size=s.pool_size,
            connect_timeout_s=s.connect_timeout_s,
            lock_timeout_s=s.lock_timeout_s,
        ) as store:
            yield store


def curated_scopes(principal: Principal) -> tuple[str, str]:
    """The (MEMORY.md, USER.md) row scopes of `principal`: its directories relative to a home,
    so the rows and the files of one principal carry the same names (the migration relies on it)."""
    root = Path()
    return (
        PurePosixPath(principal.workspace_memories_dir(root)).as_posix(),
        PurePosixPath(principal.user_memories_dir(root)).as_posix(),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPlace:
    """Where a principal's memory lives: the home's files, or the rows of one PostgreSQL schema.

    Every store of a principal beside its sessions (curated documents, held writes, skills,
    the providers' rows) is reached from here, so a session and every `keel` command act on
    the same backend.

    Attributes:
        backend: `files` or `postgres`.
        location: where it all lives, safe to print.
        pgvector: the PostgreSQL server offers the `vector` extension (detected at open and
            reported; no store needs it: semantic vectors are `real[]` scored in Python).
    """

    backend: str
    location: str
    _pg: tuple[CuratedPool, str] | None = None
    pgvector: bool = False

    def skills(self, principal: Principal, home: Path, *, guard_agent_created: bool) -> SkillLibrary | None:
        """The principal's skills as rows, mirrored under `<home>/cache/` (None: the home's files)."""
        if self._pg is None:
            return None
        from memory.skills import PgSkillLibrary

        pool, _ = self._pg
        scope = PurePosixPath(principal.skills_dir(Path())).as_posix()
        return PgSkillLibrary(
            home / "cache" / scope, pool=pool, scope=scope, guard_agent_created=guard_agent_created
        )

    def providers(self) -> PgPlace | None:
        """Where the memory providers keep their rows (None: their SQLite files in the home)."""
        if self._pg is None:
            return None
        from memory.providers import PgPlace

        pool, schema = self._pg
        return PgPlace(pool, schema, pgvector=self.pgvector)

    def curated(self, principal: Principal) -> CuratedBackend | None:
        """The principal's curated documents on this backend (None: the home's files)."""
        if self._pg is None:
            return None
        from memory.curated import PgCuratedBackend

        pool, schema = self._pg
        memory_scope, user_scope = curated_scopes(principal)
        return PgCuratedBackend(pool, schema=schema, memory_scope=memory_scope, user_scope=user_scope)

    def held(self, principal: Principal, home: Path) -> HeldWrites:
        """The principal's memory writes held for confirmation: PENDING.jsonl beside its
        MEMORY.md, or `curated_pending` rows (confirmed from any home)."""
        if self._pg is None:
            return PendingWrites(principal.workspace_memories_dir(home))
        from memory.curated import PgHeldWrites

        pool, schema = self._pg
        return PgHeldWrites(pool, schema=schema, scope=curated_scopes(principal)[0])


@dataclass(frozen=True, slots=True, kw_only=True)
class Stores(MemoryPlace):
    """The opened stores of one backend: the memory place, the sessions and the lease.

    Attributes:
        sessions: the session store.
        lease: the session lease (one PostgreSQL connection per process, or lock files).
    """

    sessions: SessionStore
    lease: SessionLease


def open_place(config: KeelConfig, home: Path) -> AbstractAsyncContextManager[MemoryPlace]:
    """Open where `config.storage` keeps memory (for PostgreSQL: the schema created or
    migrated as needed, then one pool); close it on exit.

    The `keel memory` and `keel skills` commands open this alone; `open_stores` opens it with
    the sessions and the lease.

    Raises:
        SessionStoreUnavailableError, StoreReadError: the PostgreSQL server cannot be used.
        SessionSchemaError: its schema was written by a newer keel.
    """
    return _routed(_open_place(config, home, migrate=True))


@asynccontextmanager
async def _routed(opened: AbstractAsyncContextManager[MemoryPlace]) -> AsyncIterator[MemoryPlace]:
    with routed_pg_logs(_pool_warning):
        async with opened as place:
            yield place


@asynccontextmanager
async def _open_place(config: KeelConfig, home: Path, *, migrate: bool) -> AsyncIterator[MemoryPlace]:
    if config.storage.backend == "files":
        yield MemoryPlace(backend="files", location=str(home))
        return
    from memory.curated import has_pgvector, open_curated_pool
    from memory.sessions.postgres import migrate_schema

    s = config.sessions
    url, schema = s.url or "", s.pg_schema  # the storage section moved the sessions there
    if migrate:
        await migrate_schema(url, schema=schema, connect_timeout_s=s.connect_timeout_s)
    pool = await anyio.to_thread.run_sync(
        lambda: open_curated_pool(url, schema, size=s.pool_size, timeout_s=s.connect_timeout_s)
    )  # blocking: connect
    try:
        vector = await anyio.to_thread.run_sync(has_pgvector, pool)  # blocking: one catalog query
        yield MemoryPlace(backend="postgres", location=s.location(home), _pg=(pool, schema), pgvector=vector)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(pool.close)  # blocking: close the connections


@asynccontextmanager
async def open_stores(config: KeelConfig, home: Path) -> AsyncIterator[Stores]:
    """Open every store `config.storage` names; close them in reverse on exit.

    Raises:
        SessionStoreUnavailableError, StoreReadError: the PostgreSQL server cannot be used.
        SessionSchemaError: its schema was written by a newer keel.
    """
    s = config.sessions
    async with AsyncExitStack() as stack:
        stack.enter_context(routed_pg_logs(_pool_warning))
        # The sessions first: opening them creates or migrates the schema the other rows use.
        sessions = await stack.enter_async_context(open_sessions(config, home))
        place = await stack.enter_async_context(_open_place(config, home, migrate=False))
        if place.backend == "files":
            lease: SessionLease = FileLease(home / "leases", wait_s=config.storage.lease_wait_s)
        else:
            from memory.lease import PgLease

            pg_lease = PgLease(
                s.url or "",
                schema=s.pg_schema,
                wait_s=config.storage.lease_wait_s,
                connect_timeout_s=s.connect_timeout_s,
            )
            stack.push_async_callback(pg_lease.aclose)
            lease = pg_lease
        yield Stores(
            backend=place.backend,
            location=place.location,
            _pg=place._pg,
            pgvector=place.pgvector,
            sessions=sessions,
            lease=lease,
        )
