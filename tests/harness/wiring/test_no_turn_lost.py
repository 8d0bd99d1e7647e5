"""No acknowledged turn is ever lost: `open_session` end to end while the session store refuses
writes (state.db under another process's `BEGIN EXCLUSIVE`; PostgreSQL refusing connections),
through the end of the session — `keel chat` says so and exits non-zero — to the next session
on the home, which stores every turn the user saw."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest
from psycopg import sql

from harness.cli.commands.chat import EXIT_NOT_STORED, _report_unstored
from harness.events import Warning
from harness.testing import FakeTokenizer, ScriptedModel, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from harness.wiring.stores import open_sessions
from memory import LockRetryPolicy, PgSessionStore, SessionDB, SessionStore
from tests.memory.sessions.lockholder import exclusive_lock, table_locked

FAST = LockRetryPolicy(busy_timeout_s=0.05, attempts=2, backoff_s=0.01)


def options(home: Path, model: ScriptedModel, store: SessionStore) -> SessionOptions:
    return SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), session_store=store)


async def contents(store: SessionStore, session_id: str) -> list[str]:
    return [m.message.content for m in await store.get_messages(session_id)]


async def test_turns_taken_while_state_db_is_exclusively_locked_are_stored_by_the_next_session(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / "state.db"
    db = await SessionDB.open(path, retry=FAST)
    model = ScriptedModel([say("one"), say("two"), say("three")])
    try:
        async with exclusive_lock(path):
            async with open_session(config(), options(home, model, db)) as s:
                sid = s.session_id
                first = await run_turn(s, "first while locked")
                await run_turn(s, "second while locked")
            assert any("journalled" in e.message for e in first if isinstance(e, Warning))
            # The session ended with the store still refusing: the user is told, loudly.
            assert s.handles.journal is not None and s.handles.journal.left_after_settle > 0
            assert _report_unstored(s, s.handles) == EXIT_NOT_STORED
            assert "refused" in capsys.readouterr().err
        journals = list((home / "journal").glob("*.jsonl"))
        assert len(journals) == 1 and stat.S_IMODE(journals[0].stat().st_mode) == 0o600
    finally:
        await db.aclose()

    again = await SessionDB.open(path, retry=FAST)
    try:
        async with open_session(config(), options(home, model, again)) as s2:
            await run_turn(s2, "the next session")
        assert _report_unstored(s2, s2.handles) == 0
        stored = await contents(again, sid)
        row = await again.get_session(sid)
    finally:
        await again.aclose()
    assert stored == ["first while locked", "one", "second while locked", "two"]
    assert row is not None and row.end_reason == "user_exit"
    assert not list((home / "journal").glob("*.jsonl"))


@pytest.fixture
def outage_db(postgres_url: str) -> Iterator[tuple[str, str]]:
    """A database of its own (the admin URL, the test URL), dropped afterwards."""
    prefix = os.environ.get("KEEL_TEST_PG_PREFIX", "keel_test_")
    name = f"{prefix}outage_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = postgres_url.rsplit("/", 1)[0] + "/" + name
    try:
        yield postgres_url, url
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name)))
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def allow_connections(admin_url: str, url: str, allowed: bool) -> None:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as admin:
        flag = sql.SQL("true" if allowed else "false")
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(sql.Identifier(name), flag))
        if not allowed:  # and drop the pool's open connections, as a restart would
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
            )


async def test_turns_taken_while_postgresql_refuses_connections_are_stored_by_the_next_session(
    home: Path, outage_db: tuple[str, str]
) -> None:
    admin_url, url = outage_db
    store = await PgSessionStore.open(url, schema="keel", pool_size=2, connect_timeout_s=1)
    model = ScriptedModel([say("one"), say("two"), say("three"), say("four")])
    try:
        async with open_session(config(), options(home, model, store)) as s:
            sid = s.session_id
            await run_turn(s, "before the outage")
            allow_connections(admin_url, url, False)
            during = await run_turn(s, "during the outage")
            await run_turn(s, "still down")
        assert any("journalled" in e.message for e in during if isinstance(e, Warning))
        assert s.handles.journal is not None and s.handles.journal.left_after_settle > 0
        assert _report_unstored(s, s.handles) == EXIT_NOT_STORED
    finally:
        await store.aclose()
        allow_connections(admin_url, url, True)

    again = await PgSessionStore.open(url, schema="keel", pool_size=2, connect_timeout_s=1)
    try:
        async with open_session(config(), options(home, model, again)) as s2:
            await run_turn(s2, "the next session")
        stored = await contents(again, sid)
        row = await again.get_session(sid)
    finally:
        await again.aclose()
    assert stored == ["before the outage", "one", "during the outage", "two", "still down", "three"]
    assert row is not None and row.end_reason == "user_exit"
    assert not list((home / "journal").glob("*.jsonl"))


async def test_a_turn_under_a_held_lock_goes_on_with_a_warning_and_loses_nothing(
    home: Path, postgres_url: str, pg_schema: str
) -> None:
    keys = {"sessions__backend": "postgres", "sessions__url": postgres_url, "sessions__pg_schema": pg_schema}
    cfg = config(**keys, sessions__lock_timeout_s="0.3")
    model = ScriptedModel([say("one"), say("two")])
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        with table_locked(postgres_url, pg_schema):
            events = await run_turn(s, "while locked")
        await anyio.sleep(2.1)  # past the journal's pause after a refusal
        await run_turn(s, "after")
        sid = s.session_id
    assert any("journalled" in e.message for e in events if isinstance(e, Warning))
    async with open_sessions(cfg, home) as store:
        stored = [m.message.content for m in await store.get_messages(sid)]
    assert stored == ["while locked", "one", "after", "two"]
