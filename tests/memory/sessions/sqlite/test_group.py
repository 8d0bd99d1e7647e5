"""Group commit: concurrent writes share transactions, and each caller still gets its own outcome."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from memory._sqlite import LockRetryPolicy, Outcome, SqliteConnection
from memory.errors import SessionNotFoundError, SessionStoreError
from memory.sessions import StoredMessage
from memory.sessions.sqlite._group import GroupCommit
from memory.sessions.sqlite.store import SessionDB


def _connection(tmp_path: Path) -> SqliteConnection:
    conn = SqliteConnection.connect(tmp_path / "g.db", retry=LockRetryPolicy())
    conn.autocommit(lambda c: c.execute("CREATE TABLE t (v INTEGER NOT NULL CHECK (v >= 0))"))
    return conn


def _rows(conn: SqliteConnection) -> list[int]:
    return conn.read(lambda c: [int(r[0]) for r in c.execute("SELECT v FROM t ORDER BY v")])


async def _in_thread(fn: Callable[[], list[Outcome]]) -> list[Outcome]:
    return await anyio.to_thread.run_sync(fn)


def _insert(v: int) -> Callable[[sqlite3.Connection], int]:
    def go(c: sqlite3.Connection) -> int:
        c.execute("INSERT INTO t (v) VALUES (?)", (v,))
        return v

    return go


async def test_concurrent_writes_commit_together_in_fewer_transactions(tmp_path: Path) -> None:
    conn = _connection(tmp_path)
    group = GroupCommit(conn, _in_thread)
    got: list[int] = []

    async def writer(v: int) -> None:
        got.append(await group.write(_insert(v)))

    async with anyio.create_task_group() as tg:
        for v in range(200):
            tg.start_soon(writer, v)
    assert sorted(got) == list(range(200))
    assert _rows(conn) == list(range(200))
    assert group.batches < 20  # 200 writes, a handful of shared transactions


async def test_one_failing_write_is_its_callers_error_and_the_rest_of_its_batch_commits(
    tmp_path: Path,
) -> None:
    conn = _connection(tmp_path)
    group = GroupCommit(conn, _in_thread)
    errors: list[Exception] = []

    async def writer(v: int) -> None:
        try:
            await group.write(_insert(v))
        except SessionStoreError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        for v in (1, 2, -5, 3):  # -5 breaks the CHECK constraint
            tg.start_soon(writer, v)
    assert group.batches == 1
    assert len(errors) == 1 and "CHECK constraint" in str(errors[0])
    assert _rows(conn) == [1, 2, 3]


async def test_a_caller_cancelled_while_queued_writes_nothing(tmp_path: Path) -> None:
    conn = _connection(tmp_path)
    release = anyio.Event()
    first_batch_running = anyio.Event()

    async def slow_run(fn: Callable[[], list[Outcome]]) -> list[Outcome]:
        first_batch_running.set()
        await release.wait()
        return await anyio.to_thread.run_sync(fn)

    group = GroupCommit(conn, slow_run)
    async with anyio.create_task_group() as tg:
        tg.start_soon(group.write, _insert(1))
        await first_batch_running.wait()
        with anyio.move_on_after(0.05):  # queued behind the running batch, then given up
            await group.write(_insert(2))
        release.set()
    assert _rows(conn) == [1]


async def test_a_batch_that_cannot_run_fails_every_caller_in_it(tmp_path: Path) -> None:
    conn = _connection(tmp_path)

    async def closed(fn: Callable[[], list[Outcome]]) -> list[Outcome]:
        raise SessionStoreError("the store is closed")

    group = GroupCommit(conn, closed)
    failures: list[str] = []

    async def writer(v: int) -> None:
        with pytest.raises(SessionStoreError) as info:
            await group.write(_insert(v))
        failures.append(str(info.value))

    async with anyio.create_task_group() as tg:
        for v in range(5):
            tg.start_soon(writer, v)
    assert failures == ["the store is closed"] * 5
    assert _rows(conn) == []


async def test_the_session_store_groups_appends_from_many_sessions(tmp_path: Path) -> None:
    async with await SessionDB.open(tmp_path / "state.db") as db:
        for i in range(20):
            await db.create_session(f"s{i}", source="test", started_at=time.time())
        before = db.write_batches

        async def session(i: int) -> None:
            for k in range(5):
                await db.append_message(
                    f"s{i}", StoredMessage(role="user", content=f"turn {k} of {i}", timestamp=time.time())
                )

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(session, i)
        assert db.write_batches - before < 100 / 2
        assert [len(await db.get_messages(f"s{i}")) for i in range(20)] == [5] * 20
        with pytest.raises(SessionNotFoundError):
            await db.append_message("missing", StoredMessage(role="user", content="x", timestamp=time.time()))
