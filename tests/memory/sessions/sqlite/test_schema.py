"""Numbered migrations: an older state.db upgrades in place and keeps every row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory import SessionSchemaError, StoredMessage, open_session_db
from memory.sessions.sqlite._schema import MIGRATIONS

# The schema exactly as migration 1 shipped it, written by hand so this test does not
# depend on the code under test to build the "old" database.
V1_SCHEMA = """
CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
    parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, title TEXT,
    message_count INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0, cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0, reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    api_call_count INTEGER NOT NULL DEFAULT 0);
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_started ON sessions(started_at);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content TEXT NOT NULL, api_content TEXT, tool_calls TEXT, tool_call_id TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, token_count INTEGER, summary INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, seq));
CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO schema_migrations VALUES (1, 'base tables: sessions, messages, state_meta', 1600000000.0);
INSERT INTO sessions (id, source, model, started_at, message_count, input_tokens)
    VALUES ('old', 'cli', 'gpt-4o', 1600000000.0, 2, 1234);
INSERT INTO sessions (id, source, started_at, parent_session_id)
    VALUES ('older-child', 'cli', 1600000500.0, 'old');
INSERT INTO messages (session_id, seq, role, content, timestamp)
    VALUES ('old', 0, 'user', 'remember the lighthouse keeper', 1600000010.0);
INSERT INTO messages (session_id, seq, role, content, timestamp)
    VALUES ('old', 1, 'assistant', 'noted: lighthouse', 1600000020.0);
"""


def make_v1(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.commit()
    conn.close()


def versions(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    finally:
        conn.close()


async def test_a_version_1_database_upgrades_cleanly_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    make_v1(path)
    async with open_session_db(path) as db:
        old = await db.get_session("old")
        assert old is not None
        assert (old.model, old.message_count, old.input_tokens) == ("gpt-4o", 2, 1234)
        # Migration 2 backfilled the last activity from the messages (and the start time
        # for a session without any).
        assert old.last_active_at == 1600000020.0
        child = await db.get_session("older-child")
        assert child is not None
        assert child.last_active_at == 1600000500.0
        assert await db.lineage_root("older-child") == "old"
        # Migration 2's table works.
        await db.record_flush("old", timestamp=1.0, mode="cache_safe", saved=[], refused=[], reply="")
        assert len(await db.list_flushes("old")) == 1
        # The derived indexes were built over the rows the old version wrote...
        hits = (await db.search("lighthouse")).hits
        assert [h.seq for h in hits if h.session_id == "old"]
        assert all(h.route == "fts" for h in hits)
        assert len((await db.search("ighthouse", route="trigram")).hits) == 2
        # ...and keep up with new writes.
        await db.append_message("old", StoredMessage(role="user", content="and the foghorn", timestamp=2.0))
        assert len((await db.search("foghorn")).hits) == 1
    assert versions(path) == [m.version for m in MIGRATIONS]
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


async def test_reopening_an_up_to_date_database_applies_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        await db.create_session("s1", source="cli", started_at=1.0)
    first = versions(path)
    async with open_session_db(path) as db:
        assert await db.get_session("s1") is not None
    assert versions(path) == first == [m.version for m in MIGRATIONS]


async def test_a_database_from_a_newer_keel_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    make_v1(path)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(SessionSchemaError, match=r"version 99.*upgrade keel"):
        async with open_session_db(path):
            pass
    assert versions(path) == [1, 99]  # nothing applied, nothing dropped


# The schema as migrations 1 and 2 left it (keel before user scopes), again by hand.
V2_SCHEMA = (
    V1_SCHEMA
    + """
CREATE TABLE flushes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    timestamp REAL NOT NULL, mode TEXT NOT NULL, saved TEXT NOT NULL, refused TEXT NOT NULL,
    reply TEXT NOT NULL);
CREATE INDEX flushes_session ON flushes(session_id, timestamp);
ALTER TABLE sessions ADD COLUMN last_active_at REAL;
UPDATE sessions SET last_active_at = started_at;
CREATE INDEX sessions_last_active ON sessions(last_active_at);
INSERT INTO schema_migrations VALUES (2, 'flushes; sessions.last_active_at', 1600000001.0);
INSERT INTO flushes (session_id, timestamp, mode, saved, refused, reply)
    VALUES ('old', 1600000030.0, 'cache_safe', '["lighthouse"]', '[]', 'saved one');
"""
)


def table_rows(path: Path, table: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1")]
    finally:
        conn.close()


async def test_a_single_user_home_gains_user_scopes_in_place_and_keeps_every_row(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.executescript(V2_SCHEMA)
    conn.commit()
    conn.close()
    before = {t: table_rows(path, t) for t in ("sessions", "messages", "flushes")}
    async with open_session_db(path) as db:
        sessions = await db.list_sessions()
        assert {s.id for s in sessions} == {"old", "older-child"}
        assert {s.user_id for s in sessions} == {""}
        # The default user sees all of it; another user sees none of it.
        assert len(await db.list_sessions(user_ids=[""])) == 2
        assert await db.list_sessions(user_ids=["alice"]) == []
        assert len((await db.search("lighthouse", user_ids=[""])).hits) == 2
        assert (await db.search("lighthouse", user_ids=["alice"])).hits == ()
        assert [f.reply for f in await db.list_flushes("old")] == ["saved one"]
    after = {t: table_rows(path, t) for t in ("sessions", "messages", "flushes")}
    assert after["messages"] == before["messages"]
    assert after["flushes"] == before["flushes"]
    # Every session row is unchanged, with user_id '' and memory_snapshot NULL appended.
    assert after["sessions"] == [(*row, "", None) for row in before["sessions"]]
    assert versions(path) == [m.version for m in MIGRATIONS]
