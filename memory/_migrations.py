"""Numbered schema migrations: one runner for every keel database, SQLite file or PostgreSQL schema.

A migration is a version, a name and the SQL statements that take the tables from the
previous version to this one. The versions applied are recorded in a `schema_migrations`
table (`version`, `name`, `applied_at`) next to the tables, in the same transaction as the
statements, so a crash leaves a migration either done and recorded or neither. The rules:

- versions run 1, 2, 3, … in order; a released migration is never edited, only followed
  by a new one;
- a database at a version newer than the code knows is refused, never downgraded; the
  caller's `too_new` builds that error, because each store names its own fix;
- on SQLite the version reached is also written to `PRAGMA user_version`, and a file from
  before this runner that kept its version only there (the provider stores did) is
  adopted: versions 1…user_version are recorded as applied.

`migrate_sqlite` runs inside the caller's write transaction on a `sqlite3` connection;
`migrate_postgres` inside the caller's transaction on a psycopg connection whose
`search_path` is the store's schema (the caller serializes concurrent openers).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = ["Migration", "TooNew", "migrate_postgres", "migrate_sqlite", "pending"]

TooNew = Callable[[int, int], Exception]
"""`(found, known) -> error`: what to raise for a database at version `found` > `known`."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of a schema: `statements` run in order, then `version` is recorded."""

    version: int
    name: str
    statements: tuple[str, ...]


def pending(migrations: Sequence[Migration], current: int, too_new: TooNew) -> list[Migration]:
    """The migrations still to apply to a database at `current`, in order.

    Raises:
        ValueError: the versions are not 1, 2, 3, … (a programming error).
        Exception: `too_new(current, latest)` when the database is newer than the code.
    """
    if [m.version for m in migrations] != list(range(1, len(migrations) + 1)):
        raise ValueError("migration versions must be 1, 2, 3, ... in order")
    latest = len(migrations)
    if current > latest:
        raise too_new(current, latest)
    return [m for m in migrations if m.version > current]


def _table(time_type: str, table: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {table} (version INTEGER PRIMARY KEY, "
        f"name TEXT NOT NULL, applied_at {time_type} NOT NULL)"
    )


def migrate_sqlite(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration],
    *,
    too_new: TooNew,
    now: float | None = None,
) -> int:
    """Apply every pending migration inside the caller's write transaction; return the version.

    Raises:
        Exception: `too_new(found, known)` for a database newer than `migrations`.
    """
    stamp = time.time() if now is None else now
    conn.execute(_table("REAL", "schema_migrations"))
    current = int(conn.execute("SELECT COALESCE(max(version), 0) FROM schema_migrations").fetchone()[0])
    legacy = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if current == 0 and legacy > 0:
        # Kept its version only in user_version: record what it says was applied.
        if legacy > len(migrations):
            raise too_new(legacy, len(migrations))
        conn.executemany(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            [(m.version, m.name, stamp) for m in migrations[:legacy]],
        )
        current = legacy
    for migration in pending(migrations, current, too_new):
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, stamp),
        )
    if legacy != len(migrations):
        conn.execute(f"PRAGMA user_version = {len(migrations)}")
    return len(migrations)


async def migrate_postgres(
    conn: psycopg.AsyncConnection[TupleRow],
    migrations: Sequence[Migration],
    *,
    too_new: TooNew,
    now: float | None = None,
    table: str = "schema_migrations",
) -> int:
    """Apply every pending migration inside the caller's transaction; return the version.

    `table`: where the versions are recorded. A family of tables that shares a schema with
    another (the serve runs beside the sessions) keeps its own versions in its own table.

    Raises:
        Exception: `too_new(found, known)` for a schema newer than `migrations`.
    """
    stamp = time.time() if now is None else now
    await conn.execute(_table("DOUBLE PRECISION", table))
    cur = await conn.execute(f"SELECT COALESCE(max(version), 0) FROM {table}")
    row = await cur.fetchone()
    current = int(str(row[0])) if row else 0
    for migration in pending(migrations, current, too_new):
        for statement in migration.statements:
            await conn.execute(statement)
        await conn.execute(
            f"INSERT INTO {table} (version, name, applied_at) VALUES (%s, %s, %s)",
            (migration.version, migration.name, stamp),
        )
    return len(migrations)
