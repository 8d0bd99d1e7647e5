"""SessionDB on real SQLite files: writes, reads, lineage, errors, FTS consistency, LIKE fallback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from pydantic import JsonValue

from memory import (
    LockRetryPolicy,
    SessionConflictError,
    SessionDB,
    SessionNotFoundError,
    SessionStoreBusyError,
    SessionStoreCorruptError,
    SessionStoreError,
    open_session_db,
)
from tests.memory.sessions.messages import T0, msg


def fts_integrity(path: Path, table: str) -> None:
    """FTS5's own check, including that the index agrees with its content rows (rank=1)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


async def test_a_session_round_trips_with_its_messages_in_order(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db") as db:
        await db.create_session("s1", source="cli", model="gpt-5", title="first", started_at=T0)
        first = await db.append_message("s1", msg("hello", at=T0 + 1, api_content="hello\n<memory-context>x"))
        second = await db.append_message(
            "s1",
            msg("", role="assistant", at=T0 + 2, tool_calls='[{"id":"c1","name":"memory"}]', token_count=7),
        )
        third = await db.append_message(
            "s1", msg("ok", role="tool", at=T0 + 3, tool_call_id="c1", tool_name="memory")
        )
        assert first is not None and second is not None and third is not None
        assert first < second < third
        session = await db.get_session("s1")
        assert session is not None
        assert (session.source, session.model, session.title, session.message_count) == (
            "cli",
            "gpt-5",
            "first",
            3,
        )
        assert session.last_active_at == T0 + 3
        records = await db.get_messages("s1")
        assert [r.seq for r in records] == [0, 1, 2]
        assert records[0].message.api_content == "hello\n<memory-context>x"
        assert records[1].message.tool_calls == '[{"id":"c1","name":"memory"}]'
        assert records[1].message.token_count == 7
        assert records[2].message.tool_name == "memory"
        assert records[2].message.tool_call_id == "c1"
        tail = await db.get_messages("s1", limit=2, from_end=True)
        assert [r.id for r in tail] == [second, third]
        assert [r.id for r in await db.get_messages("s1", roles=("tool",))] == [third]


async def test_usage_counters_accumulate_per_reply(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db") as db:
        await db.create_session("s1", source="cli", started_at=T0)
        await db.add_usage("s1", input=100, output=20, cache_read=900, cache_write=50, reasoning=5)
        await db.add_usage("s1", input=10, output=2, cache_read=1000)
        s = await db.get_session("s1")
        assert s is not None
        assert (s.input_tokens, s.output_tokens, s.cache_read_tokens) == (110, 22, 1900)
        assert (s.cache_write_tokens, s.reasoning_tokens, s.api_call_count) == (50, 5, 2)
        with pytest.raises(ValueError, match="non-negative"):
            await db.add_usage("s1", input=-1)


async def test_ending_a_session_keeps_the_first_reason(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db") as db:
        await db.create_session("s1", source="cli", started_at=T0)
        assert await db.end_session("s1", reason="compression", ended_at=T0 + 10) is True
        assert await db.end_session("s1", reason="user_exit", ended_at=T0 + 20) is False
        s = await db.get_session("s1")
        assert s is not None
        assert (s.end_reason, s.ended_at) == ("compression", T0 + 10)
        with pytest.raises(ValueError, match="end reason"):
            await db.end_session("s1", reason="bored", ended_at=T0)  # type: ignore[arg-type]  # bad on purpose


async def test_flush_records_keep_their_json(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db") as db:
        await db.create_session("s1", source="cli", started_at=T0)
        saved: JsonValue = [{"action": "add", "target": "user", "content": "prefers tabs"}]
        refused: JsonValue = [{"action": "add", "error": "memory is full"}]
        await db.record_flush(
            "s1", timestamp=T0, mode="memory_only", saved=saved, refused=refused, reply="Saved."
        )
        (record,) = await db.list_flushes("s1")
        assert (record.mode, record.saved, record.refused, record.reply) == (
            "memory_only",
            saved,
            refused,
            "Saved.",
        )


async def test_text_utf8_cannot_hold_is_repaired_not_refused(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db") as db:
        await db.create_session("s1", source="cli", title="bad \ud800 title", started_at=T0)
        await db.append_message("s1", msg("half a pair \udc00 here", api_content="x\ud83d"))
        await db.record_flush("s1", timestamp=T0, mode="off", saved=["\ud800"], refused=[], reply="r\udfff")
        (record,) = await db.get_messages("s1")
        assert record.message.content == "half a pair \ufffd here"
        assert record.message.api_content == "x\ufffd"
        session = await db.get_session("s1")
        assert session is not None
        assert session.title == "bad \ufffd title"
        (flush,) = await db.list_flushes("s1")
        assert (flush.reply, flush.saved) == ("r\ufffd", ["\ufffd"])


async def test_bad_writes_fail_clearly_and_change_nothing(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db") as db:
        await db.create_session("s1", source="cli", started_at=T0)
        with pytest.raises(SessionConflictError, match="'s1' already exists"):
            await db.create_session("s1", source="cli", started_at=T0)
        with pytest.raises(SessionNotFoundError, match="'ghost'"):
            await db.create_session("s2", source="cli", started_at=T0, parent_session_id="ghost")
        with pytest.raises(SessionNotFoundError, match="'ghost'"):
            await db.append_message("ghost", msg("hi"))
        with pytest.raises(ValueError, match="role"):
            await db.append_message("s1", msg("hi", role="narrator"))
        with pytest.raises(ValueError, match="session_id"):
            await db.create_session("", source="cli", started_at=T0)
        # A batch with one bad message writes none of them.
        with pytest.raises(ValueError, match="timestamp"):
            await db.append_messages("s1", [msg("a"), msg("b", at=float("nan"))])
        assert await db.get_session("s2") is None
        assert await db.get_messages("s1") == []


async def test_lineage_root_follows_parents_and_survives_a_cycle(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        await db.create_session("a", source="cli", started_at=T0)
        await db.create_session("b", source="cli", started_at=T0, parent_session_id="a")
        await db.create_session("c", source="cli", started_at=T0, parent_session_id="b")
        await db.create_session("x", source="cli", started_at=T0)
        await db.create_session("y", source="cli", started_at=T0, parent_session_id="x")
        assert await db.lineage_root("c") == "a"
        assert await db.lineage_roots(["c", "b", "y", "unknown"]) == {
            "c": "a",
            "b": "a",
            "y": "x",
            "unknown": "unknown",
        }
    # Only a hand edit can make a loop; the walk must still end, with one root for all.
    conn = sqlite3.connect(path)
    conn.execute("UPDATE sessions SET parent_session_id = 'y' WHERE id = 'x'")
    conn.commit()
    conn.close()
    async with open_session_db(path) as db:
        assert await db.lineage_roots(["x", "y"]) == {"x": "x", "y": "x"}
        assert await db.lineage_root("y") == "x"


async def test_search_finds_stemmed_words_dotted_names_and_cjk_substrings(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db") as db:
        assert db.features.fts
        assert db.features.trigram
        await db.create_session("s1", source="cli", started_at=T0)
        ids = await db.append_messages(
            "s1",
            [
                msg("I spent the weekend painting sunsets"),
                msg("the build broke on my-app.config.ts again", role="assistant"),
                msg("我喜欢中文搜索引擎"),
                msg("tool output about painting", role="tool", tool_name="shell"),
            ],
        )
        hits = (await db.search("paints")).hits
        assert [h.message_id for h in hits] == [ids[0]]  # the tool row is filtered out by role
        assert hits[0].route == "fts"
        assert {h.message_id for h in (await db.search("paints", roles=None)).hits} == {ids[0], ids[3]}
        assert [h.message_id for h in (await db.search("my-app.config.ts")).hits] == [ids[1]]
        cjk = (await db.search("搜索引擎")).hits
        assert [(h.message_id, h.route) for h in cjk] == [(ids[2], "trigram")]
        assert [h.route for h in (await db.search("中文")).hits] == ["like"]  # 2 chars: below a trigram
        assert (await db.search("sunsets AND build")).hits == ()
        assert {h.message_id for h in (await db.search("sunsets OR build")).hits} == {ids[0], ids[1]}
        assert {h.message_id for h in (await db.search("sunsets build", match="any")).hits} == {
            ids[0],
            ids[1],
        }


async def test_fts_indexes_stay_consistent_through_updates_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        await db.create_session("s1", source="cli", started_at=T0)
        ids = await db.append_messages(
            "s1",
            [msg(f"message number {i} about apples") for i in range(20)] + [msg("tool apples", role="tool")],
        )
    conn = sqlite3.connect(path)

    def changes(sql: str, *args: object) -> int:
        # total_changes counts rows written by triggers too, FTS5 index writes included.
        before = conn.total_changes
        conn.execute(sql, args)
        return conn.total_changes - before

    assert changes("UPDATE messages SET content = 'now about oranges' WHERE id = ?", ids[3]) > 1
    assert changes("UPDATE messages SET role = 'tool' WHERE id = ?", ids[4]) > 1  # leaves the trigram index
    assert changes("DELETE FROM messages WHERE id IN (?, ?)", ids[5], ids[20]) > 2
    # Columns no index covers, or an indexed one set to its own value: no trigger fires.
    assert changes("UPDATE messages SET token_count = 3, summary = 1 WHERE id = ?", ids[6]) == 1
    assert changes("UPDATE messages SET content = content WHERE id = ?", ids[7]) == 1
    conn.commit()
    conn.close()
    fts_integrity(path, "messages_fts")
    fts_integrity(path, "messages_trigram")
    async with open_session_db(path) as db:
        assert [h.message_id for h in (await db.search("oranges")).hits] == [ids[3]]
        apples = {h.message_id for h in (await db.search("apples", roles=None)).hits}
        assert ids[3] not in apples
        assert ids[5] not in apples
        assert ids[20] not in apples
        assert ids[4] in apples  # still in the word index as a tool row
        substring = {h.message_id for h in (await db.search("apples", route="trigram", roles=None)).hits}
        assert ids[4] not in substring
        assert ids[0] in substring


async def test_without_fts_search_falls_back_to_like(tmp_path: Path) -> None:
    async with open_session_db(tmp_path / "state.db", fts=False) as db:
        assert not db.features.fts
        assert not db.features.trigram
        await db.create_session("s1", source="cli", started_at=T0)
        ids = await db.append_messages(
            "s1",
            [msg("deploying the kube cluster"), msg("100% done_ok"), msg("nothing here"), msg("doneXok")],
        )
        hits = (await db.search("kube deploy", match="any")).hits
        assert [h.route for h in hits] == ["like"]
        assert [h.message_id for h in hits] == [ids[0]]
        # LIKE wildcards in the query are literal text, not patterns.
        assert [h.message_id for h in (await db.search("done_ok")).hits] == [ids[1]]
        # A message holding more of the terms ranks first.
        more = (await db.search("deploying cluster nothing", match="any")).hits
        assert more[0].message_id == ids[0]


async def test_an_index_dropped_by_a_no_fts_process_is_rebuilt_on_the_next_fts_open(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        await db.create_session("s1", source="cli", started_at=T0)
        await db.append_message("s1", msg("written with the index on"))
    async with open_session_db(path, fts=False) as db:
        late = await db.append_message("s1", msg("written while the index was off: zebra"))
    async with open_session_db(path) as db:
        hits = (await db.search("zebra")).hits
        assert [(h.message_id, h.route) for h in hits] == [(late, "fts")]
    fts_integrity(path, "messages_fts")
    fts_integrity(path, "messages_trigram")


async def test_a_writer_holding_the_lock_too_long_gives_a_busy_error_not_sqlite3(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    retry = LockRetryPolicy(busy_timeout_s=0.02, attempts=2, backoff_s=0.01)
    async with open_session_db(path, retry=retry) as db:
        await db.create_session("s1", source="cli", started_at=T0)
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(SessionStoreBusyError, match="locked"):
                await db.append_message("s1", msg("blocked"))
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert await db.get_messages("s1") == []


async def test_a_write_waits_out_a_short_lock_through_retries(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    retry = LockRetryPolicy(busy_timeout_s=0.05, attempts=200, backoff_s=0.01)
    async with open_session_db(path, retry=retry) as db:
        await db.create_session("s1", source="cli", started_at=T0)
        blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        blocker.execute("BEGIN IMMEDIATE")
        results: list[int | None] = []

        async def write() -> None:
            results.append(await db.append_message("s1", msg("eventually")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            await anyio.sleep(0.3)  # the write is now retrying in its worker thread
            blocker.execute("ROLLBACK")
        blocker.close()
        assert len(results) == 1
        assert [r.message.content for r in await db.get_messages("s1")] == ["eventually"]


async def test_a_file_that_is_not_a_database_is_reported_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(SessionStoreCorruptError, match="move it aside"):
        await SessionDB.open(path)


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    db = await SessionDB.open(tmp_path / "state.db")
    await db.aclose()
    await db.aclose()  # idempotent
    with pytest.raises(SessionStoreError, match="closed"):
        await db.get_session("s1")


async def test_the_database_files_are_private_to_the_owner(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with open_session_db(path) as db:
        await db.create_session("s1", source="cli", started_at=T0)
    assert path.stat().st_mode & 0o077 == 0
