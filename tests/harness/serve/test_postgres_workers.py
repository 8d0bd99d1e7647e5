"""Two `keel serve` processes on two homes sharing one PostgreSQL schema: any worker serves any
session and any run's stream, a busy session is 409 on both, and a SIGKILLed worker loses
nothing acknowledged."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from harness.testing.processes import KeelServer, keel_servers
from tests.harness.serve.conftest import (
    first_started,
    killed_worker_loses_nothing,
    sse_events,
    turn,
    wait_ended,
    write_config,
)


def pg_config(path: Path, model_url: str, url: str, schema: str) -> Path:
    storage = {"backend": "postgres", "url": url, "pg_schema": schema, "lease_wait_s": 3}
    return write_config(path, model_url, storage=storage)


@pytest.fixture(scope="module")
def schema(postgres_url: str) -> Iterator[str]:
    name = f"keel_test_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(postgres_url, autocommit=True, options="-c client_min_messages=warning") as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture(scope="module")
def pair(
    model_url: str, postgres_url: str, schema: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[KeelServer]]:
    root = tmp_path_factory.mktemp("serve-pg")
    config = pg_config(root / "keel.yaml", model_url, postgres_url, schema)
    with keel_servers(config, home=[root / "home-a", root / "home-b"]) as servers:
        yield servers


def test_a_session_started_on_one_worker_continues_on_the_other(pair: list[KeelServer]) -> None:
    a, b = pair
    with httpx.Client(base_url=a.url, timeout=30) as ca, httpx.Client(base_url=b.url, timeout=30) as cb:
        session = ca.post("/v1/sessions").json()["id"]
        first = turn(ca, session, "on a")
        assert wait_ended(cb, first)["output"] == "echo: on a"  # b reads a's run
        second = turn(cb, session, "on b")
        events_from_a = sse_events(ca, f"/v1/runs/{second}/events")
        assert events_from_a[-1][1] == "run.completed"
        assert (
            sse_events(cb, f"/v1/runs/{second}/events", headers={"Last-Event-ID": "1"}) == events_from_a[1:]
        )
        contents = [m["content"] for m in ca.get(f"/v1/sessions/{session}/messages").json()["data"]]
        assert contents == ["on a", "echo: on a", "on b", "echo: on b"]


def test_a_busy_session_is_409_on_every_worker(pair: list[KeelServer]) -> None:
    a, b = pair
    with httpx.Client(base_url=a.url, timeout=30) as ca, httpx.Client(base_url=b.url, timeout=30) as cb:
        session = ca.post("/v1/sessions").json()["id"]
        slow = turn(ca, session, "slow [sleep=2]")
        first_started(cb, slow)
        for client in (ca, cb):
            response = client.post(f"/v1/sessions/{session}/turns", json={"input": "no"})
            assert response.status_code == 409 and response.json()["error"]["code"] == "session_busy"
        assert wait_ended(cb, slow)["status"] == "completed"
        assert wait_ended(ca, turn(cb, session, "yes"))["status"] == "completed"


def test_a_sigkilled_worker_loses_nothing_acknowledged(
    model_url: str, postgres_url: str, pg_schema: str, tmp_path: Path
) -> None:
    config = pg_config(tmp_path / "keel.yaml", model_url, postgres_url, pg_schema)
    with keel_servers(config, home=[tmp_path / "a", tmp_path / "b"]) as (a, b):
        killed_worker_loses_nothing(a, b)
