"""PostgreSQL refusing writes: a lock another client holds is waited on no longer than
`lock_timeout_s` (then `SessionStoreBusyError`), and with the pool exhausted by such waits
every concurrent write is journalled — none lost — and stored once the lock is gone."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from memory import PgSessionStore, SessionStoreBusyError, StoredMessage
from memory.sessions import JournalledWriter
from tests.memory.sessions.lockholder import table_locked


def msg(content: str) -> StoredMessage:
    return StoredMessage(role="user", content=content, timestamp=time.time())


async def test_a_lock_held_by_another_client_is_waited_on_only_until_the_lock_timeout(
    postgres_url: str, pg_schema: str
) -> None:
    store = await PgSessionStore.open(postgres_url, schema=pg_schema, lock_timeout_s=0.3)
    try:
        await store.create_session("s", source="test", started_at=time.time())
        with table_locked(postgres_url, pg_schema):
            started = time.monotonic()
            with pytest.raises(SessionStoreBusyError, match="lock timeout"):
                await store.append_message("s", msg("waits"))
            assert time.monotonic() - started < 5.0
        await store.append_message("s", msg("after"))
        assert [m.message.content for m in await store.get_messages("s")] == ["after"]
    finally:
        await store.aclose()


async def test_with_the_pool_exhausted_every_concurrent_write_is_journalled_then_stored(
    home: Path, postgres_url: str, pg_schema: str
) -> None:
    store = await PgSessionStore.open(
        postgres_url, schema=pg_schema, pool_size=1, connect_timeout_s=1, lock_timeout_s=3
    )
    writers = [JournalledWriter(store, home / "journal", warn=lambda _: None) for _ in range(12)]
    try:
        for i in range(len(writers)):
            await store.create_session(f"s{i}", source="test", started_at=time.time())
        with table_locked(postgres_url, pg_schema):
            async with anyio.create_task_group() as tg:
                for i, w in enumerate(writers):
                    tg.start_soon(w.append_message, f"s{i}", msg(f"turn {i}"))
            assert sum(w.pending for w in writers) == len(writers)  # every one refused, none lost
        assert [await w.settle() for w in writers] == [0] * len(writers)
        for i in range(len(writers)):
            assert [m.message.content for m in await store.get_messages(f"s{i}")] == [f"turn {i}"]
    finally:
        await store.aclose()
    assert not list((home / "journal").glob("*.jsonl"))
