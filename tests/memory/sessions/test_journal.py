"""The write journal against a real state.db another process holds under `BEGIN EXCLUSIVE`:
refused writes are kept on disk (owner-only), in order, and stored by the next session."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

from memory import LockRetryPolicy, SessionDB, StoredMessage, StoredUsage
from memory.sessions import JournalledWriter, replay_journals
from tests.memory.sessions.lockholder import exclusive_lock

FAST = LockRetryPolicy(busy_timeout_s=0.05, attempts=2, backoff_s=0.01)


def msg(role: str, content: str) -> StoredMessage:
    return StoredMessage(role=role, content=content, timestamp=time.time())  # type: ignore[arg-type]  # test roles are valid


async def contents(db: SessionDB, session_id: str) -> list[str]:
    return [m.message.content for m in await db.get_messages(session_id)]


async def test_writes_refused_under_an_exclusive_lock_are_journalled_and_stored_by_the_next_session(
    home: Path,
) -> None:
    path, journal_dir = home / "state.db", home / "journal"
    warnings: list[str] = []
    db = await SessionDB.open(path, retry=FAST)
    writer = JournalledWriter(db, journal_dir, warn=warnings.append)
    try:
        await writer.create_session(
            "s1", source="test", started_at=time.time(), model="m", parent_session_id=None, user_id=""
        )
        await writer.append_message("s1", msg("user", "before the lock"))
        async with exclusive_lock(path):
            await writer.append_message("s1", msg("assistant", "one"))
            await writer.append_message("s1", msg("user", "while it is locked"))
            await writer.append_messages("s1", [msg("assistant", "two"), msg("tool", "three")])
            await writer.end_session("s1", reason="user_exit", ended_at=time.time())
            assert writer.pending == 4
            journal = writer.path
            assert journal is not None and journal.parent == journal_dir
            assert stat.S_IMODE(journal.stat().st_mode) == 0o600
            assert stat.S_IMODE(journal_dir.stat().st_mode) == 0o700
            assert len(warnings) == 1 and "journalled" in warnings[0]
            # The session ends while the store still refuses: the writes stay on disk.
            assert await writer.settle() == 4
            assert writer.left_after_settle == 4 and journal.exists()
    finally:
        await db.aclose()

    # The next session on the home stores them, in order, once.
    again = await SessionDB.open(path, retry=FAST)
    try:
        later: list[str] = []
        assert await replay_journals(journal_dir, again, warn=later.append) == 0
        assert await replay_journals(journal_dir, again, warn=later.append) == 0  # nothing twice
        stored = await contents(again, "s1")
        session = await again.get_session("s1")
    finally:
        await again.aclose()
    assert stored == ["before the lock", "one", "while it is locked", "two", "three"]
    assert session is not None and session.end_reason == "user_exit"
    assert not list(journal_dir.glob("*.jsonl"))
    assert len(later) == 1 and "stored 4 write(s)" in later[0]


async def test_the_writer_replays_its_own_journal_in_order_as_soon_as_the_store_takes_writes(
    home: Path,
) -> None:
    path = home / "state.db"
    now = [0.0]
    db = await SessionDB.open(path, retry=FAST)
    writer = JournalledWriter(db, home / "journal", warn=lambda _: None, clock=lambda: now[0])
    try:
        await writer.create_session(
            "s1", source="test", started_at=time.time(), model=None, parent_session_id=None, user_id=""
        )
        async with exclusive_lock(path):
            await writer.append_message("s1", msg("user", "a"))
            await writer.append_message("s1", msg("assistant", "b"))
        now[0] = 60.0  # past the pause after a refusal
        await writer.append_message("s1", msg("user", "c"))
        assert writer.pending == 0
        assert await contents(db, "s1") == ["a", "b", "c"]
        assert await writer.settle() == 0
        assert not list((home / "journal").glob("*.jsonl"))
    finally:
        await db.aclose()


async def test_a_journal_whose_owner_still_runs_or_that_names_another_store_is_left_alone(home: Path) -> None:
    path, journal_dir = home / "state.db", home / "journal"
    db = await SessionDB.open(path, retry=FAST)
    writer = JournalledWriter(db, journal_dir, warn=lambda _: None)
    other = await SessionDB.open(home / "other.db", retry=FAST)
    try:
        async with exclusive_lock(path):
            await writer.create_session(
                "s1", source="test", started_at=time.time(), model=None, parent_session_id=None, user_id=""
            )
            assert writer.pending == 1
        # The owner (this writer) holds its flock: another session does not replay it.
        assert await replay_journals(journal_dir, db, warn=lambda _: None) == 0
        assert await db.get_session("s1") is None
        await writer.settle()  # stores it: the lock is gone
        assert await db.get_session("s1") is not None
        # A journal written for state.db is never replayed into another store.
        writer2 = JournalledWriter(db, journal_dir, warn=lambda _: None)
        async with exclusive_lock(path):
            await writer2.append_message("s1", msg("user", "kept"))
            assert await writer2.settle() == 1
        assert await replay_journals(journal_dir, other, warn=lambda _: None) == 0
        assert await contents(other, "s1") == []
        assert len(list(journal_dir.glob("*.jsonl"))) == 1
    finally:
        await other.aclose()
        await db.aclose()


async def test_a_torn_last_line_is_ignored_and_the_acknowledged_writes_are_stored(home: Path) -> None:
    path, journal_dir = home / "state.db", home / "journal"
    db = await SessionDB.open(path, retry=FAST)
    try:
        await db.create_session("s1", source="test", started_at=time.time())
        writer = JournalledWriter(db, journal_dir, warn=lambda _: None)
        async with exclusive_lock(path):
            await writer.append_message("s1", msg("user", "acknowledged"))
            journal = writer.path
            assert await writer.settle() == 1
        assert journal is not None
        with journal.open("ab") as handle:
            handle.write(b'{"kind": "messages", "session_id": "s1", "messa')  # a crash mid-write
        assert await replay_journals(journal_dir, db, warn=lambda _: None) == 0
        assert await contents(db, "s1") == ["acknowledged"]
    finally:
        await db.aclose()


async def test_a_message_and_a_usage_refused_on_the_direct_path_are_journalled_whole(home: Path) -> None:
    """While nothing is journalled, writes go straight to the store; the journal line is built only
    when the store refuses one, and must still hold all of it."""
    path, journal_dir = home / "state.db", home / "journal"
    db = await SessionDB.open(path, retry=FAST)
    writer = JournalledWriter(db, journal_dir, warn=lambda _: None)
    try:
        await writer.create_session(
            "s1", source="test", started_at=time.time(), model=None, parent_session_id=None, user_id=""
        )
        assert await writer.append_message("s1", msg("user", "stored at once")) is not None
        await writer.add_usage("s1", input=7, output=3, cache_read=2, cache_write=1, reasoning=0)
        async with exclusive_lock(path):
            usage = StoredUsage(input=100, output=10, api_calls=1)
            assert (
                await writer.append_message("s1", msg("assistant", "refused, journalled"), usage=usage)
                is None
            )
            assert writer.pending == 1  # the message with its usage: one value, replayed in one transaction
            await writer.settle()
        async with exclusive_lock(path):
            again = JournalledWriter(db, journal_dir, warn=lambda _: None)
            await again.add_usage("s1", input=5, output=4, cache_read=0, cache_write=0, reasoning=1)
            assert again.pending == 1
            await again.settle()
        assert await replay_journals(journal_dir, db, warn=lambda _: None) == 0
        stored = await contents(db, "s1")
        session = await db.get_session("s1")
    finally:
        await db.aclose()
    assert stored == ["stored at once", "refused, journalled"]
    assert session is not None
    assert (session.input_tokens, session.output_tokens, session.reasoning_tokens) == (112, 17, 1)
    assert (session.cache_read_tokens, session.api_call_count) == (2, 3)


async def test_a_journal_written_before_writes_were_values_still_replays(home: Path) -> None:
    """The lines of an older keel: a header without identity, a message and its usage as two lines."""
    journal_dir = home / "journal"
    journal_dir.mkdir()
    db = await SessionDB.open(home / "state.db", retry=FAST)
    try:
        await db.create_session("s1", source="test", started_at=1.0)
        lines = [
            {"kind": "header", "location": db.location, "version": 1},
            {
                "kind": "messages",
                "session_id": "s1",
                "messages": [{"role": "assistant", "content": "old line", "timestamp": 2.0}],
            },
            {
                "kind": "usage",
                "session_id": "s1",
                "input": 4,
                "output": 2,
                "cache_read": 0,
                "cache_write": 0,
                "reasoning": 0,
                "api_calls": 1,
            },
        ]
        (journal_dir / "old.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        assert await replay_journals(journal_dir, db, warn=lambda _: None) == 0
        stored = await contents(db, "s1")
        session = await db.get_session("s1")
    finally:
        await db.aclose()
    assert stored == ["old line"]
    assert session is not None and (session.input_tokens, session.output_tokens) == (4, 2)
