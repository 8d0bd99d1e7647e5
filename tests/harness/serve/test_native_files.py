"""The native API over real HTTP: one `keel serve` process on the files backend, a fake model.

Sessions, turns, the run's event stream and its resumption, idempotency keys, a busy
session, cancelling, and the messages of a conversation.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from harness.testing.processes import KeelServer, keel_server
from tests.harness.serve.conftest import sse_events, turn, wait_ended, write_config


@pytest.fixture(scope="module")
def server(model_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeelServer]:
    root = tmp_path_factory.mktemp("serve-files")
    config = write_config(root / "keel.yaml", model_url)
    with keel_server(config, home=root / "home") as s:
        yield s


def new_session(client: httpx.Client) -> str:
    response = client.post("/v1/sessions")
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_a_turn_streams_its_events_in_order_and_the_conversation_keeps_it(client: httpx.Client) -> None:
    session = new_session(client)
    run_id = turn(client, session, "hello keel")
    events = sse_events(client, f"/v1/runs/{run_id}/events")
    kinds = [kind for _, kind, _ in events]
    assert kinds[0] == "run.started" and kinds[-1] == "run.completed"
    assert "text.delta" in kinds and "usage" in kinds
    assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1))
    text = "".join(str(d["text"]) for _, k, d in events if k == "text.delta")
    assert text == "echo: hello keel"
    usage = next(d for _, k, d in events if k == "usage")
    assert {"cache_read_tokens", "cache_write_tokens"} <= usage.keys() and int(
        str(usage["cache_read_tokens"])
    ) > 0
    run = client.get(f"/v1/runs/{run_id}").json()
    assert (
        run["status"] == "completed" and run["output"] == "echo: hello keel" and run["session_id"] == session
    )
    turn2 = turn(client, session, "second")
    wait_ended(client, turn2)
    data = client.get(f"/v1/sessions/{session}/messages").json()["data"]
    assert [(m["role"], m["content"]) for m in data] == [
        ("user", "hello keel"),
        ("assistant", "echo: hello keel"),
        ("user", "second"),
        ("assistant", "echo: second"),
    ]


def test_last_event_id_or_after_resumes_the_stream_after_that_event(client: httpx.Client) -> None:
    session = new_session(client)
    run_id = turn(client, session, "resume me")
    everything = sse_events(client, f"/v1/runs/{run_id}/events")
    resumed = sse_events(client, f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "2"})
    assert resumed == everything[2:]
    assert sse_events(client, f"/v1/runs/{run_id}/events?after=3") == everything[3:]
    bad = client.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "two"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "Last-Event-ID"


def test_an_idempotency_key_makes_a_retry_return_the_same_run(client: httpx.Client) -> None:
    session = new_session(client)
    first = turn(client, session, "once", **{"Idempotency-Key": "key-1"})
    again = turn(client, session, "once", **{"Idempotency-Key": "key-1"})
    assert again == first
    other = client.post(
        f"/v1/sessions/{session}/turns", json={"input": "twice"}, headers={"Idempotency-Key": "key-1"}
    )
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"
    wait_ended(client, first)
    runs = [m for m in client.get(f"/v1/sessions/{session}/messages").json()["data"] if m["role"] == "user"]
    assert len(runs) == 1


def test_a_second_turn_while_one_runs_is_session_busy_and_runs_after_it_ends(client: httpx.Client) -> None:
    session = new_session(client)
    slow = turn(client, session, "slow [sleep=2]")
    busy = client.post(f"/v1/sessions/{session}/turns", json={"input": "too soon"})
    assert busy.status_code == 409
    assert busy.json()["error"]["code"] == "session_busy"
    assert wait_ended(client, slow)["status"] == "completed"
    assert wait_ended(client, turn(client, session, "now"))["status"] == "completed"


def test_cancel_ends_a_running_run_as_cancelled(client: httpx.Client) -> None:
    session = new_session(client)
    run_id = turn(client, session, "long [sleep=20]")
    response = client.post(f"/v1/runs/{run_id}/cancel")
    assert response.status_code == 200
    run = wait_ended(client, run_id)
    assert run["status"] == "cancelled"
    last = sse_events(client, f"/v1/runs/{run_id}/events")[-1]
    assert last[1] == "run.failed" and last[2]["error"] == {
        "code": "cancelled",
        "message": "the run was cancelled",
    }
    assert wait_ended(client, turn(client, session, "after the cancel"))["status"] == "completed"


def test_healthz_and_models_answer(client: httpx.Client) -> None:
    assert client.get("/healthz").json()["status"] == "ok"
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["fake-model"]


def test_a_model_endpoint_that_fails_fails_the_run_with_the_model_error_and_keeps_the_session(
    client: httpx.Client,
) -> None:
    session = new_session(client)
    run_id = turn(client, session, "break [fail]")
    events = sse_events(client, f"/v1/runs/{run_id}/events")
    assert events[-1][1] == "run.failed"
    error = events[-1][2]["error"]
    assert isinstance(error, dict) and error["code"] == "model_error" and "500" in str(error["message"])
    assert client.get(f"/v1/runs/{run_id}").json()["status"] == "failed"
    assert wait_ended(client, turn(client, session, "fine again"))["output"] == "echo: fine again"


def test_a_client_that_hangs_up_mid_stream_leaves_the_run_going(server: KeelServer) -> None:
    """The run goes on without its reader, and its events are all in the store."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        session = new_session(client)
        run_id = turn(client, session, "write [sleep=0.5]")
        with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
            next(response.iter_lines())  # read the first line, then hang up mid-stream
        assert wait_ended(client, run_id)["status"] == "completed"
        assert sse_events(client, f"/v1/runs/{run_id}/events")[-1][1] == "run.completed"
