"""The run store's rules on both backends: admission, busy sessions, queues, idempotency,
events with their sequence, a lost worker's run, and the retention prune."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from memory.runs import NewRun, RunEnd, RunStore, open_run_store
from memory.runs.store import IDEMPOTENCY_TTL_S


@pytest.fixture(params=["files", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        schema: str = request.getfixturevalue("pg_schema")
        async with open_run_store("postgres", home=tmp_path, url=url, pg_schema=schema) as s:
            yield s
    else:
        async with open_run_store("files", home=tmp_path) as s:
            yield s


def new(run_id: str, session: str = "s1", **kw: object) -> NewRun:
    return NewRun(id=run_id, session_id=session, user_id="ada", input=f"input of {run_id}", worker="w1", **kw)  # type: ignore[arg-type]


async def test_a_second_run_of_a_busy_session_is_refused_until_the_first_ends(store: RunStore) -> None:
    first = await store.admit(new("r1"))
    assert first.outcome == "accepted" and first.run is not None and first.run.status == "running"
    assert first.run.input == "input of r1"  # stored before anyone is told
    busy = await store.admit(new("r2"))
    assert busy.outcome == "busy" and busy.run is not None and busy.run.id == "r1"
    assert await store.get("r2") is None
    other = await store.admit(new("r3", session="s2"))
    assert other.outcome == "accepted"
    assert await store.append("r1", [(1, "run.completed", "{}")], end=RunEnd("completed", output="hi"))
    again = await store.admit(new("r2"))
    assert again.outcome == "accepted"


async def test_concurrent_admissions_of_one_session_accept_exactly_one(store: RunStore) -> None:
    outcomes: list[str] = []

    async def one(i: int) -> None:
        outcomes.append((await store.admit(new(f"r{i}"))).outcome)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(one, i)
    assert sorted(outcomes) == ["accepted"] + ["busy"] * 7


async def test_queued_runs_start_in_order_when_the_session_frees(store: RunStore) -> None:
    await store.admit(new("r1"))
    q2 = await store.admit(new("r2", busy="queue"), now=1e10)
    q3 = await store.admit(new("r3", busy="queue"), now=1e10 + 1)
    assert q2.outcome == q3.outcome == "accepted"
    assert q2.run is not None and q2.run.status == "queued"
    assert not await store.start_queued("r2")  # r1 still runs
    await store.append("r1", [], end=RunEnd("completed", output=""))
    assert not await store.start_queued("r3")  # r2 is older
    assert await store.start_queued("r2")
    r2 = await store.get("r2")
    assert r2 is not None and r2.status == "running"


async def test_an_idempotency_key_returns_its_run_and_refuses_another_body(store: RunStore) -> None:
    first = await store.admit(new("r1", idempotency_key="k", body_hash="h1"), now=1000.0)
    replay = await store.admit(new("r2", idempotency_key="k", body_hash="h1"), now=1001.0)
    assert replay.outcome == "replayed" and replay.run is not None and first.run is not None
    assert replay.run.id == first.run.id == "r1"
    conflict = await store.admit(new("r3", idempotency_key="k", body_hash="h2"), now=1002.0)
    assert conflict.outcome == "conflict"
    await store.append("r1", [], end=RunEnd("completed", output=""))
    expired = await store.admit(
        new("r4", idempotency_key="k", body_hash="h2"), now=1000.0 + IDEMPOTENCY_TTL_S + 1
    )
    assert expired.outcome == "accepted" and expired.run is not None and expired.run.id == "r4"


async def test_events_are_read_after_a_sequence_number(store: RunStore) -> None:
    await store.admit(new("r1"))
    await store.append("r1", [(1, "run.started", "{}"), (2, "text.delta", '{"text": "a"}')])
    await store.append("r1", [(3, "text.delta", '{"text": "b"}')])
    assert [e.seq for e in await store.events_after("r1", 0)] == [1, 2, 3]
    assert [e.seq for e in await store.events_after("r1", 2)] == [3]
    assert [e.seq for e in await store.events_after("r1", 0, limit=2)] == [1, 2]


async def test_a_lost_run_fails_with_its_reason_after_its_last_event_and_frees_the_session(
    store: RunStore,
) -> None:
    await store.admit(new("r1"))
    await store.append("r1", [(1, "run.started", "{}"), (2, "text.delta", "{}")])
    assert [r.id for r in await store.open_runs(exclude_worker="w2")] == ["r1"]
    assert await store.open_runs(exclude_worker="w1") == []
    assert await store.fail_lost("r1", code="worker_lost", message="gone")
    assert not await store.fail_lost("r1", code="worker_lost", message="gone")  # once
    run = await store.get("r1")
    assert run is not None and run.status == "failed" and run.error_code == "worker_lost"
    events = await store.events_after("r1", 0)
    assert [e.type for e in events] == ["run.started", "text.delta", "run.failed"]
    assert json.loads(events[-1].data)["error"]["code"] == "worker_lost"
    # the dead worker's late end changes nothing
    assert not await store.append("r1", [], end=RunEnd("completed", output="late"))
    assert (await store.admit(new("r2"))).outcome == "accepted"


async def test_prune_drops_events_of_runs_ended_before_the_cutoff_only(store: RunStore) -> None:
    await store.admit(new("old", session="a"))
    await store.append("old", [(1, "run.completed", "{}")], end=RunEnd("completed", output=""), now=100.0)
    await store.admit(new("live", session="b"))
    await store.append("live", [(1, "run.started", "{}")], now=100.0)
    assert await store.prune(events_before=200.0) == 1
    assert await store.events_after("old", 0) == []
    assert len(await store.events_after("live", 0)) == 1
    assert await store.get("old") is not None  # the run (and its input) stays


async def test_a_cancel_request_is_seen_by_the_runs_worker(store: RunStore) -> None:
    await store.admit(new("r1"))
    run = await store.request_cancel("r1")
    assert run is not None and run.cancel_requested
    assert await store.cancels_for("w1") == ["r1"]
    assert await store.cancels_for("w2") == []
