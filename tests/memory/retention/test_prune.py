"""`memory.retention` on real stores: state.db and a PostgreSQL schema, leases held by real processes."""

from __future__ import annotations

import os
import selectors
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

from memory import PgSessionStore, SessionStore, StoredMessage, open_session_db
from memory.retention import (
    SessionRetention,
    prune_archive_rows,
    prune_pg_sessions,
    prune_state_db,
)
from memory.sessions.postgres import PgTarget

REPO = Path(__file__).resolve().parents[3]
WORKER = REPO / "tests" / "memory" / "lease" / "lease_worker.py"
NOW = 1_800_000_000.0
DAY = 86_400.0

# (id, parent, user, days ago, messages): lineages old-a (a1 → a2), new-b, old-c, old-d (d1 → d2)
SESSIONS = (
    ("a1", None, "ada", 40, 3),
    ("a2", "a1", "ada", 35, 2),
    ("b1", None, "ada", 1, 4),
    ("c1", None, "bo", 50, 2),
    ("d1", None, "bo", 60, 2),
    ("d2", "d1", "bo", 45, 1),
)


async def seed(db: SessionStore) -> None:
    for sid, parent, user, age, count in SESSIONS:
        t0 = NOW - age * DAY
        await db.create_session(sid, source="cli", started_at=t0, parent_session_id=parent, user_id=user)
        await db.append_messages(
            sid,
            [
                StoredMessage(role="user", content=f"zeppelin note {sid} {i}", timestamp=t0 + i)
                for i in range(count)
            ],
        )
        await db.record_flush(sid, timestamp=t0 + 1, mode="memory_only", saved=["x"], refused=[], reply="ok")


@contextmanager
def lease_held(backend: str, target: str, root: str) -> Iterator[None]:
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "hold", backend, target, root],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(60), "the lease holder printed nothing"
        assert proc.stdout.readline().strip() == "held"
        yield
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


class Backend:
    """One store under test, with the prune and lease of its backend."""

    def __init__(self, name: str, tmp_path: Path, url: str = "", schema: str = "") -> None:
        self.name, self.tmp_path, self.url, self.schema = name, tmp_path, url, schema

    @asynccontextmanager
    async def store(self) -> AsyncIterator[SessionStore]:
        if self.name == "sqlite":
            async with open_session_db(self.tmp_path / "state.db") as db:
                yield db
        else:
            async with await PgSessionStore.open(self.url, schema=self.schema) as pg:
                yield pg

    @property
    def lease_target(self) -> tuple[str, str]:
        if self.name == "sqlite":
            return "files", str(self.tmp_path / "leases")
        return "postgres", f"{self.url}#{self.schema}"

    async def prune(self, rules: SessionRetention, *, dry_run: bool) -> dict[str, tuple[int, int]]:
        if self.name == "sqlite":
            import anyio.to_thread

            parts = await anyio.to_thread.run_sync(
                lambda: prune_state_db(
                    self.tmp_path / "state.db",
                    rules,
                    leases_dir=self.tmp_path / "leases",
                    dry_run=dry_run,
                    now=NOW,
                )
            )
        else:
            parts = await prune_pg_sessions(PgTarget(self.url, self.schema), rules, dry_run=dry_run, now=NOW)
        return {p.what: (p.count, p.kept_live) for p in parts}


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", tmp_path)
    return Backend(
        "postgres",
        tmp_path,
        request.getfixturevalue("postgres_url"),
        request.getfixturevalue("sessions_schema"),
    )


async def remaining(backend: Backend) -> set[str]:
    async with backend.store() as db:
        return {sid for sid, *_ in SESSIONS if await db.get_session(sid) is not None}


async def test_age_removes_whole_old_lineages_and_keeps_the_one_a_live_turn_holds(backend: Backend) -> None:
    async with backend.store() as db:
        await seed(db)
    rules = SessionRetention(max_age_s=30 * DAY)
    with lease_held(*backend.lease_target, "d1"):
        dry = await backend.prune(rules, dry_run=True)
        assert await remaining(backend) == {sid for sid, *_ in SESSIONS}
        done = await backend.prune(rules, dry_run=False)
    assert dry == done
    assert done == {"sessions": (3, 1), "messages": (7, 0), "flushes": (3, 0)}
    assert await remaining(backend) == {"b1", "d1", "d2"}
    async with backend.store() as db:  # what is left is still found, what went is not
        assert [m.message.content for m in await db.get_messages("b1")] == [
            f"zeppelin note b1 {i}" for i in range(4)
        ]
        assert await db.get_messages("a2") == []


async def test_a_lineage_stays_whole_while_any_of_its_sessions_is_recent(backend: Backend) -> None:
    async with backend.store() as db:
        await seed(db)
        await db.create_session(
            "a3", source="cli", started_at=NOW - 2 * DAY, parent_session_id="a2", user_id="ada"
        )
    done = await backend.prune(SessionRetention(max_age_s=30 * DAY), dry_run=False)
    assert done["sessions"] == (3, 0)  # c1, d1, d2; a1 and a2 stay for a3
    assert await remaining(backend) == {"a1", "a2", "b1"}


async def test_the_per_user_cap_removes_oldest_lineages_and_keeps_each_users_newest(backend: Backend) -> None:
    async with backend.store() as db:
        await seed(db)
    done = await backend.prune(SessionRetention(max_messages_per_user=4), dry_run=False)
    # ada: b1 (4) fits, a (5) does not; bo: d (last active 45 days ago, 3) fits, c1 (2) does not
    assert done["sessions"] == (3, 0)
    assert await remaining(backend) == {"b1", "d1", "d2"}


async def test_no_rules_remove_nothing(backend: Backend) -> None:
    async with backend.store() as db:
        await seed(db)
    assert await backend.prune(SessionRetention(), dry_run=False) == {}
    assert len(await remaining(backend)) == len(SESSIONS)


async def test_the_sqlite_full_text_indexes_stay_consistent_after_a_prune(tmp_path: Path) -> None:
    backend = Backend("sqlite", tmp_path)
    async with backend.store() as db:
        await seed(db)
    await backend.prune(SessionRetention(max_age_s=30 * DAY), dry_run=False)
    conn = sqlite3.connect(tmp_path / "state.db")
    try:
        for index in ("messages_fts", "messages_trigram"):
            conn.execute(f"INSERT INTO {index}({index}) VALUES ('integrity-check')")
        hits = conn.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'zeppelin'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert hits == 4  # b1's messages only
    assert not (tmp_path / "leases" / "a1.lock").exists()


async def test_postgres_archive_rows_past_the_age_go_and_the_table_stays_append_only(
    postgres_url: str, sessions_schema: str
) -> None:
    import psycopg

    async with await PgSessionStore.open(postgres_url, schema=sessions_schema):
        pass
    with psycopg.connect(postgres_url, autocommit=True, options=f"-c search_path={sessions_schema}") as conn:
        for stamp in ("2020-01-01T00:00:00+00:00", "2026-12-01T00:00:00+00:00"):
            conn.execute(
                "INSERT INTO curated_archive (scope, target, content, evicted_at) VALUES ('u', 'memory', 'x', %s)",
                (stamp,),
            )
    target = PgTarget(postgres_url, sessions_schema)
    parts = await prune_archive_rows(target, max_age_s=365 * DAY, dry_run=False, now=NOW)
    assert [(p.what, p.count) for p in parts] == [("archived entries", 1)]
    with psycopg.connect(postgres_url, autocommit=True, options=f"-c search_path={sessions_schema}") as conn:
        assert conn.execute("SELECT evicted_at FROM curated_archive").fetchall() == [
            ("2026-12-01T00:00:00+00:00",)
        ]
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("DELETE FROM curated_archive")


async def test_postgres_prune_removes_the_lease_fences_of_pruned_lineages_only(
    postgres_url: str, sessions_schema: str
) -> None:
    import psycopg

    backend = Backend("postgres", Path("."), postgres_url, sessions_schema)
    async with backend.store() as db:
        await seed(db)
    with psycopg.connect(postgres_url, autocommit=True, options=f"-c search_path={sessions_schema}") as conn:
        for root in ("a1", "b1", "c1", "d1"):  # a fence per lineage, as past leases left them
            conn.execute(
                "INSERT INTO session_fences (lineage, token, holder, held_from) VALUES (%s, 3, 'w', 1)",
                (root,),
            )
    rules = SessionRetention(max_age_s=30 * DAY)
    with lease_held(*backend.lease_target, "d1"):
        await backend.prune(rules, dry_run=True)
        with psycopg.connect(
            postgres_url, autocommit=True, options=f"-c search_path={sessions_schema}"
        ) as conn:
            assert (
                len(conn.execute("SELECT lineage FROM session_fences").fetchall()) == 4
            )  # a dry run keeps them
        await backend.prune(rules, dry_run=False)
    with psycopg.connect(postgres_url, autocommit=True, options=f"-c search_path={sessions_schema}") as conn:
        left = {row[0] for row in conn.execute("SELECT lineage FROM session_fences").fetchall()}
    # a1 and c1 went with their sessions; b1 is recent; d1's lease was held, so d1 stays whole.
    assert left == {"b1", "d1"}
