"""New messages reach the full-text indexes once per write transaction, not by a trigger per row.

Each case checks the index against its content rows with FTS5's own integrity check (which
fails on a row indexed twice or not at all) and through search.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anyio

from memory import SessionDB, StoredMessage, open_session_db

# Spec version 1 indexed each insert with these triggers (as an older keel still creates them).
V1_INSERT_TRIGGERS = (
    "CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN "
    "INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) VALUES (new.id, "
    "CASE WHEN new.role = 'tool' THEN substr(new.content, 1, 8192) ELSE new.content END, "
    "new.tool_name, new.tool_calls); END",
    "CREATE TRIGGER messages_trigram_ai AFTER INSERT ON messages WHEN new.role <> 'tool' BEGIN "
    "INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content); END",
)


def msg(content: str, role: str = "user") -> StoredMessage:
    return StoredMessage(role=role, content=content, timestamp=time.time())  # type: ignore[arg-type]  # test roles are valid


def check_indexes(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        for table in ("messages_fts", "messages_trigram"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def sql(path: Path, *statements: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        rows: list[tuple[object, ...]] = []
        for statement in statements:
            rows = conn.execute(statement).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()


async def hits(db: SessionDB, query: str, route: str = "fts") -> int:
    return len((await db.search(query, route=route, roles=None)).hits)  # type: ignore[arg-type]  # a valid route


async def test_concurrent_writes_share_one_indexing_step_and_every_row_is_indexed_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        for s in range(20):
            await db.create_session(f"s{s}", source="cli", started_at=1.0)
        before = db.write_batches
        async with anyio.create_task_group() as tg:
            for s in range(20):
                tg.start_soon(db.append_message, f"s{s}", msg(f"the lighthouse keeper {s} wrote"))
                tg.start_soon(db.append_message, f"s{s}", msg(f"a tool saw the lighthouse {s}", "tool"))
        assert db.write_batches - before < 40  # the writes shared transactions
        assert await hits(db, "lighthouse") == 40
        assert await hits(db, "ighthous", "trigram") == 20  # tool output is not in the trigram index
    check_indexes(path)


async def test_a_version_1_index_is_upgraded_in_place_and_keeps_up(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        await db.create_session("s1", source="cli", started_at=1.0)
        await db.append_message("s1", msg("remember the lighthouse keeper"))
    # Make it what spec version 1 left: its insert triggers, its version marks.
    sql(
        path,
        *V1_INSERT_TRIGGERS,
        "UPDATE state_meta SET value = '1' WHERE key IN ('index:messages_fts', 'index:messages_trigram')",
    )
    async with open_session_db(path) as db:
        await db.append_message("s1", msg("and the lighthouse foghorn"))
        assert await hits(db, "lighthouse") == 2
        assert await hits(db, "foghorn") == 1
    triggers = {str(r[0]) for r in sql(path, "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert "messages_fts_ai" not in triggers and "messages_trigram_ai" not in triggers
    assert "messages_fts_ad" in triggers and "messages_trigram_au" in triggers
    marks = {
        str(k): str(v) for k, v in sql(path, "SELECT key, value FROM state_meta WHERE key LIKE 'index:%'")
    }
    assert marks["index:messages_fts"] == marks["index:messages_trigram"] == "2"
    check_indexes(path)


async def test_an_older_keels_insert_trigger_is_not_doubled_and_rows_it_missed_are_caught_up(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        await db.create_session("s1", source="cli", started_at=1.0)
        await db.append_message("s1", msg("first about the zeppelin"))
        # An older keel on the same home puts its per-row insert triggers back...
        sql(path, *V1_INSERT_TRIGGERS)
        await db.append_message("s1", msg("second about the zeppelin"))
        assert await hits(db, "zeppelin") == 2  # indexed by the trigger, not a second time
        check_indexes(path)
        # ...and later a writer that indexes nothing at all (its triggers dropped) adds a row.
        sql(
            path,
            "DROP TRIGGER messages_fts_ai",
            "DROP TRIGGER messages_trigram_ai",
            "INSERT INTO messages (session_id, seq, role, content, timestamp) "
            "VALUES ('s1', 2, 'user', 'third about the zeppelin', 3.0)",
            "UPDATE sessions SET message_count = 3 WHERE id = 's1'",
        )
        await db.append_message("s1", msg("fourth, about something else"))  # the next transaction
        assert await hits(db, "zeppelin") == 3
        assert await hits(db, "something") == 1
    check_indexes(path)
