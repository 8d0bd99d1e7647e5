"""The one migration runner, on a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from memory._migrations import Migration, migrate_postgres, migrate_sqlite, pending

STEPS = (
    Migration(1, "notes", ("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",)),
    Migration(2, "notes.tag", ("ALTER TABLE notes ADD COLUMN tag TEXT NOT NULL DEFAULT ''",)),
)


class Newer(Exception):
    pass


def too_new(found: int, known: int) -> Newer:
    return Newer(f"at {found}, know {known}")


def recorded(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    return [
        (int(v), str(n)) for v, n in conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1")
    ]


def run(path: Path, steps: tuple[Migration, ...] = STEPS) -> int:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = migrate_sqlite(conn, steps, too_new=too_new, now=1.0)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()
    return version


def test_sqlite_applies_each_migration_once_and_records_it(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    assert run(path, STEPS[:1]) == 1
    assert run(path) == 2
    assert run(path) == 2  # nothing left to do
    with sqlite3.connect(path) as conn:
        assert recorded(conn) == [(1, "notes"), (2, "notes.tag")]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        conn.execute("INSERT INTO notes (body, tag) VALUES ('a', 'b')")


def test_sqlite_refuses_a_newer_database_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    run(path)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (3, 'from the future', 0)")
    with pytest.raises(Newer, match="at 3, know 2"):
        run(path)
    with sqlite3.connect(path) as conn:
        assert [v for v, _ in recorded(conn)] == [1, 2, 3]


def test_sqlite_adopts_a_file_that_kept_its_version_in_user_version(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        conn.execute("INSERT INTO notes (body) VALUES ('kept')")
        conn.execute("PRAGMA user_version = 1")
    assert run(path) == 2  # migration 1 is not run again (its CREATE would fail), 2 is
    with sqlite3.connect(path) as conn:
        assert recorded(conn) == [(1, "notes"), (2, "notes.tag")]
        assert conn.execute("SELECT body, tag FROM notes").fetchall() == [("kept", "")]


def test_sqlite_refuses_a_user_version_from_a_newer_keel(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 9")
    with pytest.raises(Newer, match="at 9, know 2"):
        run(path)


def test_versions_must_count_up_from_one() -> None:
    with pytest.raises(ValueError, match="1, 2, 3"):
        pending((STEPS[1],), 0, too_new)


async def test_postgres_applies_records_and_refuses_newer(postgres_url: str, pg_schema: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(f'CREATE SCHEMA "{pg_schema}"')
        await conn.execute(f'SET search_path = "{pg_schema}"')
        for steps in (STEPS[:1], STEPS, STEPS):
            async with conn.transaction():
                assert await migrate_postgres(conn, steps, too_new=too_new, now=1.0) == len(steps)
        cur = await conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1")
        assert await cur.fetchall() == [(1, "notes"), (2, "notes.tag")]
        await conn.execute("INSERT INTO schema_migrations VALUES (3, 'from the future', 0)")
        with pytest.raises(Newer, match="at 3, know 2"):
            async with conn.transaction():
                await migrate_postgres(conn, STEPS, too_new=too_new)
