"""What the PostgreSQL provider stores share: where their rows live, the writer row of a
scope, one transaction with a bounded lock wait, and word queries.

The tables are migration 5 of the keel schema (`memory.sessions.postgres._schema`):
`holo_*` for the holographic facts (`holographic._pg`), `sem_*` for the semantic memories
(`semantic._pg`), and `provider_scopes`, one row per (scope, store). A scope is a user: the
user's directory relative to a keel home (`.` for the default user, `users/<id>`), so the
rows of one user carry the name their SQLite file had (the migration maps one onto the
other) and no query ever reads across scopes.

The `provider_scopes` row does what the SQLite file's write lock did: every write that adds,
changes or removes content first updates it (`claim`), so the writers of one user's store
are ordered on every machine — a duplicate check and the insert after it see the same
facts — and its `generation` tells a reader whether its cached vectors are stale. Ids are
drawn from its `next_id` (per scope, never reused, like SQLite's AUTOINCREMENT), so a fact
keeps the id it had in its file after a migration.

Blocking (psycopg's synchronous pool, shared with the curated documents and skills):
called from worker threads only.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, TypeAlias

import psycopg
import psycopg.errors
import psycopg_pool
from psycopg.rows import TupleRow

from memory.scope import Principal

__all__ = [
    "TS_CONFIG",
    "PgPlace",
    "ProviderScope",
    "ScopeCopy",
    "ScopeKind",
    "StoreKind",
    "any_words",
    "claim",
    "first_line",
    "generation",
    "is_lock_timeout",
    "next_id",
    "provider_scope",
    "scope_exists",
    "scope_transaction",
    "set_next_id",
    "store_error",
    "transaction",
]

Conn: TypeAlias = psycopg.Connection[TupleRow]
Pool: TypeAlias = psycopg_pool.ConnectionPool[Conn]
"""The synchronous pool the curated documents use too (`memory.curated.CuratedPool`)."""
StoreKind: TypeAlias = Literal["facts", "semantic"]

_FOLD = str.maketrans(dict.fromkeys(string.punctuation, " "))
TS_CONFIG = "english"


@dataclass(frozen=True, slots=True)
class PgPlace:
    """The keel schema provider rows live in: a synchronous pool whose connections have the
    schema alone on their search path (`memory.curated.open_curated_pool`), and its name.

    Attributes:
        pgvector: the server offers the `vector` extension. Informational: the stores score
            vectors in Python over one user's rows and never need it.
    """

    pool: Pool
    schema: str
    lock_timeout_s: float = 5.0
    pgvector: bool = False


@dataclass(frozen=True, slots=True)
class ScopeCopy:
    """What copying one user's provider file into PostgreSQL did (`keel storage migrate`).

    Attributes:
        outcome: `copied`; `skipped` (the scope already holds exactly this data); `conflict`
            (it holds other data, left alone: nothing is overwritten).
        verified: the rows read back have the source's count and hash.
        rows: facts or memories in the source.
    """

    outcome: Literal["copied", "skipped", "conflict"]
    verified: bool
    rows: int


def scope_exists(conn: Conn, scope: str, store: StoreKind) -> bool:
    """Whether the scope's store has been written (or copied into) before."""
    row = conn.execute(
        "SELECT 1 FROM provider_scopes WHERE scope = %s AND store = %s", (scope, store)
    ).fetchone()
    return row is not None


def set_next_id(conn: Conn, scope: str, store: StoreKind, value: int) -> None:
    """After a copy: ids continue from `value` (after `claim`)."""
    conn.execute(
        "UPDATE provider_scopes SET next_id = %s WHERE scope = %s AND store = %s", (value, scope, store)
    )


def provider_scope(user_id: str | None) -> str:
    """The scope of `user_id`'s provider rows: `.` for the default user, else `users/<id>`.

    Raises:
        ValueError: `user_id` is not a safe directory name (as for the files).
    """
    return PurePosixPath(Principal(user_id=user_id).user_dir(Path())).as_posix()


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


@contextmanager
def transaction(place: PgPlace, translate: Callable[[BaseException], Exception]) -> Iterator[Conn]:
    """One transaction on a pooled connection: committed when the block ends, rolled back
    when it raises. A lock held by another writer is waited for at most the place's
    `lock_timeout_s`; psycopg and pool errors leave as `translate(exc)`."""
    try:
        with place.pool.connection() as conn:
            conn.execute(f"SET LOCAL lock_timeout = '{max(1, round(place.lock_timeout_s * 1000))}ms'")
            yield conn
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        raise translate(exc) from exc


def is_lock_timeout(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.errors.LockNotAvailable)


def store_error(
    exc: BaseException,
    error: Callable[[str], Exception],
    *,
    what: str,
    tables: str,
    place: PgPlace,
    location: str,
) -> Exception:
    """A provider store's error for a psycopg or pool failure, naming the fix: a writer that
    held the scope too long (retry), tables never migrated, or the server itself.

    Args:
        error: the store's error type, built from the message.
        what: the store, for messages (`fact store`); tables: its tables (`fact`).
        location: where its rows live (the store's `location`).
    """
    if is_lock_timeout(exc):
        return error(f"the {what} ({location}) stayed locked by another writer ({first_line(exc)}); retry")
    if isinstance(exc, psycopg.errors.UndefinedTable):
        return error(
            f"the {tables} tables are missing from PostgreSQL schema {place.schema!r}; open the keel stores "
            "(storage.backend: postgres) once so the schema is migrated"
        )
    return error(
        f"the {what} ({location}) failed: {first_line(exc)}; check that the PostgreSQL server is up "
        "(storage.url), then retry"
    )


@contextmanager
def scope_transaction(
    place: PgPlace,
    scope: str,
    store: StoreKind,
    translate: Callable[[BaseException], Exception],
    *,
    write: bool,
) -> Iterator[Conn]:
    """One `transaction` of a provider store; a content write first takes the scope's writer row."""
    with transaction(place, translate) as conn:
        if write:
            claim(conn, scope, store)
        yield conn


@dataclass(frozen=True, slots=True)
class ScopeKind:
    """What a provider's PostgreSQL store is: its `provider_scopes` kind, its name in messages
    (`fact store`), its main table, the name of its tables (`fact`), its error type."""

    store: StoreKind
    what: str
    table: str
    tables: str
    error: Callable[[str], Exception]


class ProviderScope:
    """One user's rows of a provider store in `place` (the PostgreSQL side of
    `memory.providers._sqlite.ProviderFile`): one transaction per call, errors as the store's
    own, a clear refusal once closed. The pool belongs to the caller: `close` only stops
    this object from being used."""

    def __init__(self, place: PgPlace, scope: str, kind: ScopeKind) -> None:
        self.place = place
        self.scope = scope
        self.kind = kind
        self._closed = False

    @property
    def location(self) -> str:
        return f"PostgreSQL schema {self.place.schema!r}, table {self.kind.table}, scope {self.scope!r}"

    def close(self) -> None:
        self._closed = True

    def transaction(self, *, write: bool = False) -> AbstractContextManager[Conn]:
        """One transaction; a content write first takes the scope's writer row."""
        if self._closed:
            raise self.kind.error(f"the {self.kind.what} ({self.location}) is closed")
        return scope_transaction(self.place, self.scope, self.kind.store, self._translate, write=write)

    def _translate(self, exc: BaseException) -> Exception:
        kind = self.kind
        return store_error(
            exc, kind.error, what=kind.what, tables=kind.tables, place=self.place, location=self.location
        )


def claim(conn: Conn, scope: str, store: StoreKind) -> int:
    """Lock the scope's writer row for this transaction and bump its generation (returned)."""
    conn.execute(
        "INSERT INTO provider_scopes (scope, store, next_id, generation) VALUES (%s, %s, 1, 0) "
        "ON CONFLICT DO NOTHING",
        (scope, store),
    )
    row = conn.execute(
        "UPDATE provider_scopes SET generation = generation + 1 WHERE scope = %s AND store = %s "
        "RETURNING generation",
        (scope, store),
    ).fetchone()
    assert row is not None  # inserted above; rows are never deleted
    return int(str(row[0]))


def next_id(conn: Conn, scope: str, store: StoreKind) -> int:
    """The next id of the scope's store (after `claim` in the same transaction)."""
    row = conn.execute(
        "UPDATE provider_scopes SET next_id = next_id + 1 WHERE scope = %s AND store = %s "
        "RETURNING next_id - 1",
        (scope, store),
    ).fetchone()
    assert row is not None  # `claim` made the row
    return int(str(row[0]))


def generation(conn: Conn, scope: str, store: StoreKind) -> int:
    """How many content writes the scope's store has seen (0 before the first)."""
    row = conn.execute(
        "SELECT generation FROM provider_scopes WHERE scope = %s AND store = %s", (scope, store)
    ).fetchone()
    return 0 if row is None else int(str(row[0]))


def any_words(terms: Sequence[str]) -> tuple[str, list[str]]:
    """A tsquery expression matching any of `terms`, and its parameters: each term stemmed
    with punctuation read as spaces, as the generated `search_tsv` columns index text."""
    query = " || ".join(f"plainto_tsquery('{TS_CONFIG}', %s)" for _ in terms)
    return f"({query})", [t.translate(_FOLD) for t in terms]
