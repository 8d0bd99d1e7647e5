"""`PgCuratedBackend`: the curated documents as versioned PostgreSQL rows.

The tables (migration 3 of the keel schema, `memory.sessions.postgres._schema`):

- `curated_docs (scope, target, version, text)`: the head of each document; `scope` is the
  principal's workspace (`memory`) or user (`user`) key, so two principals never share a row;
- `curated_versions (scope, target, version, text, sha256)`: every version ever written,
  append-only, so a session resumed on another worker can rebuild the snapshot it started
  with from the version recorded on its session row;
- `curated_archive`: entries evicted by `overflow: evict_oldest`, append-only (a trigger
  refuses UPDATE and DELETE);
- `curated_backups`: the raw text of a document a write refused because it did not round-trip;
- `curated_pending` (migration 6): the writes held for the user's confirmation
  (`PgHeldWrites`), so `keel memory confirm` on any home answers a write held on any worker.

A write is one transaction: make sure the head row exists, `SELECT ... FOR UPDATE` it (the
row lock orders concurrent writers on every machine, waiting at most the store's lock
timeout), let the store plan on that text, then archive, bump the version, insert the
version row and commit — all or nothing. A writer killed mid-transaction holds nothing: the
server rolls its transaction back when the connection drops.

Blocking (psycopg's synchronous pool): the store calls this from worker threads only.
psycopg errors are translated into `memory.errors` here.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import psycopg.errors
import psycopg_pool
from psycopg.rows import TupleRow

from memory.curated._backend import DocRead, DocTxn, text_hash
from memory.curated._entries import FILE_NAMES, MemoryTarget
from memory.curated._pending import PendingWrite, held_stamp, no_such_held_write, pending_write
from memory.errors import StoreLockTimeout, StoreReadError, StoreWriteError
from memory.pgpool import PoolRecipe, sync_pool
from memory.provenance import Origin

__all__ = ["CuratedPool", "PgCuratedBackend", "PgHeldWrites", "has_pgvector", "open_curated_pool"]

CuratedPool = psycopg_pool.ConnectionPool[psycopg.Connection[TupleRow]]


def open_curated_pool(url: str, schema: str, *, size: int, timeout_s: float) -> CuratedPool:
    """A synchronous pool with `schema` alone on the search path (blocking: call from a thread).

    Raises:
        StoreReadError: the server cannot be reached.
    """
    pool = sync_pool(PoolRecipe(url=url, store="curated", schema=schema, size=size, timeout_s=timeout_s))
    try:
        pool.open(wait=True, timeout=timeout_s)
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        pool.close()
        raise StoreReadError(
            f"cannot reach the PostgreSQL server for curated memory: {_first_line(exc)}"
        ) from exc
    return pool


def has_pgvector(pool: CuratedPool) -> bool:
    """Whether the server offers the `vector` extension (pgvector), installed or installable.

    Detected at open so a store that could use it says so; nothing here creates the extension.
    """
    try:
        with pool.connection() as conn:
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"
            ).fetchone()
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        raise StoreReadError(
            f"cannot ask the PostgreSQL server for its extensions: {_first_line(exc)}"
        ) from exc
    return bool(row and row[0])


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


@dataclass(slots=True)
class _PgTxn:
    conn: psycopg.Connection[TupleRow]
    scope: str
    target: MemoryTarget
    read: DocRead
    clock: float
    replaced: list[str] = field(default_factory=list)

    def check_writable(self) -> None:
        return None  # rows have no read-only bit; the role's privileges decide

    def backup(self, raw: bytes, unix_seconds: int) -> Path | None:
        self.conn.execute(
            "INSERT INTO curated_backups (scope, target, version, raw, taken_at) VALUES (%s, %s, %s, %s, %s)",
            (self.scope, self.target, self.read.version, raw, float(unix_seconds)),
        )
        self.conn.commit()  # the backup is kept although the write is refused
        return None

    def archive(self, records: Sequence[Mapping[str, str]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO curated_archive (scope, target, content, evicted_at) VALUES (%s, %s, %s, %s)",
                [(self.scope, r["target"], r["content"], r["evicted_at"]) for r in records],
            )

    def replace(self, text: str) -> None:
        version = (self.read.version or 0) + 1
        self.conn.execute(
            "UPDATE curated_docs SET version = %s, text = %s, updated_at = %s WHERE scope = %s AND target = %s",
            (version, text, self.clock, self.scope, self.target),
        )
        self.conn.execute(
            "INSERT INTO curated_versions (scope, target, version, text, sha256, written_at) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (self.scope, self.target, version, text, text_hash(text), self.clock),
        )
        self.replaced.append(text)


class PgCuratedBackend:
    """MEMORY.md of `memory_scope` and USER.md of `user_scope` as rows of one keel schema.

    Args:
        pool: a pool from `open_curated_pool` (the caller closes it).
        schema: the schema's name, for messages.
        memory_scope: the key of the workspace whose MEMORY.md this is (e.g. `ws:default`).
        user_scope: the key of the user whose USER.md this is (e.g. `user:alice`).
    """

    def __init__(self, pool: CuratedPool, *, schema: str, memory_scope: str, user_scope: str) -> None:
        self._pool = pool
        self._schema = schema
        self.scopes: dict[MemoryTarget, str] = {"memory": memory_scope, "user": user_scope}

    def location(self, target: MemoryTarget) -> str:
        return f"PostgreSQL schema {self._schema!r}, table curated_docs, scope {self.scopes[target]!r} ({FILE_NAMES[target]})"

    def archive_location(self, target: MemoryTarget) -> str:
        return f"PostgreSQL schema {self._schema!r}, table curated_archive, scope {self.scopes[target]!r}"

    def _fail(self, exc: BaseException, what: str) -> Exception:
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            return StoreLockTimeout(
                f"another writer held the {what} row too long; nothing was changed. Retry in a moment "
                "(or raise memory.lock_timeout_s)."
            )
        return StoreWriteError(
            f"the PostgreSQL server failed while writing {what} ({_first_line(exc)}); nothing was changed. "
            "Check that the server is up (storage.url), then retry."
        )

    def read(self, target: MemoryTarget) -> DocRead:
        try:
            with self._pool.connection() as conn:
                row = conn.execute(
                    "SELECT version, text FROM curated_docs WHERE scope = %s AND target = %s",
                    (self.scopes[target], target),
                ).fetchone()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreReadError(
                f"could not read {FILE_NAMES[target]} from PostgreSQL ({_first_line(exc)}); check that the "
                "server is up (storage.url), then retry"
            ) from exc
        if row is None:
            return DocRead(exists=False, text="", raw=None, error=None, version=0)
        text = str(row[1])
        return DocRead(exists=True, text=text, raw=text.encode("utf-8"), error=None, version=int(row[0]))

    def read_version(self, target: MemoryTarget, version: int) -> DocRead | None:
        if version == 0:
            return DocRead(exists=False, text="", raw=None, error=None, version=0)
        try:
            with self._pool.connection() as conn:
                row = conn.execute(
                    "SELECT text FROM curated_versions WHERE scope = %s AND target = %s AND version = %s",
                    (self.scopes[target], target, version),
                ).fetchone()
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreReadError(
                f"could not read {FILE_NAMES[target]} version {version}: {_first_line(exc)}"
            ) from exc
        if row is None:
            return None
        text = str(row[0])
        return DocRead(exists=True, text=text, raw=text.encode("utf-8"), error=None, version=version)

    @contextlib.contextmanager
    def transaction(self, target: MemoryTarget, timeout_s: float) -> Iterator[DocTxn]:
        scope, name = self.scopes[target], FILE_NAMES[target]
        try:
            with self._pool.connection(timeout=timeout_s) as conn:
                conn.execute(f"SET LOCAL lock_timeout = '{max(1, round(timeout_s * 1000))}ms'")
                now = time.time()
                conn.execute(
                    "INSERT INTO curated_docs (scope, target, version, text, updated_at) "
                    "VALUES (%s, %s, 0, '', %s) ON CONFLICT DO NOTHING",
                    (scope, target, now),
                )
                row = conn.execute(
                    "SELECT version, text FROM curated_docs WHERE scope = %s AND target = %s FOR UPDATE",
                    (scope, target),
                ).fetchone()
                assert row is not None  # inserted above, and rows are never deleted
                version, text = int(row[0]), str(row[1])
                read = DocRead(
                    exists=version > 0, text=text, raw=text.encode("utf-8"), error=None, version=version
                )
                yield _PgTxn(conn, scope, target, read, now)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._fail(exc, name) from exc


class PgHeldWrites:
    """The held writes of one principal as `curated_pending` rows (the `HeldWrites` contract).

    Args:
        pool: a pool from `open_curated_pool` (the caller closes it).
        schema: the schema's name, for messages.
        scope: the principal's workspace key (held writes live beside its MEMORY.md, as
            PENDING.jsonl does in a home).
        clock: Unix seconds, for `held_at`.
    """

    def __init__(
        self, pool: CuratedPool, *, schema: str, scope: str, clock: Callable[[], float] = time.time
    ) -> None:
        self._pool = pool
        self._schema = schema
        self._scope = scope
        self._clock = clock

    @property
    def location(self) -> str:
        return f"PostgreSQL schema {self._schema!r}, table curated_pending, scope {self._scope!r}"

    def _error(self, exc: BaseException, doing: str) -> StoreWriteError:
        return StoreWriteError(
            f"the PostgreSQL server failed while {doing} held memory writes ({_first_line(exc)}); "
            "nothing was changed. Check that the server is up (storage.url), then retry."
        )

    def hold(self, target: MemoryTarget, content: str, origin: Origin) -> PendingWrite:
        stamp = held_stamp(self._clock)
        try:
            with self._pool.connection() as conn:
                conn.execute(
                    "INSERT INTO curated_pending (scope, target, content, origin, held_at) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (self._scope, target, content, origin, stamp),
                )
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._error(exc, "keeping") from exc
        return PendingWrite(target, content, origin, stamp)

    def _rows(self, conn: psycopg.Connection[TupleRow], *, lock: bool) -> list[tuple[int, PendingWrite]]:
        rows = conn.execute(
            "SELECT held_id, target, content, origin, held_at FROM curated_pending WHERE scope = %s "
            "ORDER BY held_id" + (" FOR UPDATE" if lock else ""),
            (self._scope,),
        ).fetchall()
        held: list[tuple[int, PendingWrite]] = []
        for held_id, *fields in rows:
            found = pending_write(*fields)
            if found is not None:
                held.append((int(held_id), found))
        return held

    def list(self) -> list[PendingWrite]:
        try:
            with self._pool.connection() as conn:
                return [p for _, p in self._rows(conn, lock=False)]
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreReadError(
                f"could not read the held memory writes from PostgreSQL ({_first_line(exc)}); check that "
                "the server is up (storage.url), then retry"
            ) from exc

    def take(self, number: int) -> PendingWrite:
        try:
            with self._pool.connection() as conn:
                held = self._rows(conn, lock=True)
                if not 1 <= number <= len(held):
                    raise no_such_held_write(number, len(held))
                held_id, taken = held[number - 1]
                conn.execute("DELETE FROM curated_pending WHERE held_id = %s", (held_id,))
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise self._error(exc, "taking one of the") from exc
        return taken
