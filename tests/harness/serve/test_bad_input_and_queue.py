"""Bad input gets a clear error naming what to fix; `serve.busy: queue` runs a second turn after the first."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from harness.testing.processes import KeelServer, keel_server
from tests.harness.serve.conftest import sse_events, turn, wait_ended, write_config


@pytest.fixture(scope="module")
def server(model_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeelServer]:
    root = tmp_path_factory.mktemp("serve-queue")
    config = write_config(root / "keel.yaml", model_url, serve={"busy": "queue", "max_body_bytes": 2048})
    with keel_server(config, home=root / "home") as s:
        yield s


def session(client: httpx.Client) -> str:
    return str(client.post("/v1/sessions").json()["id"])


def error(response: httpx.Response, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    body: dict[str, str] = response.json()["error"]
    return body


def test_a_body_over_the_cap_is_413(client: httpx.Client) -> None:
    s = session(client)
    big = error(client.post(f"/v1/sessions/{s}/turns", json={"input": "x" * 5000}), 413)
    assert big["code"] == "body_too_large" and "serve.max_body_bytes" in big["message"]
    chunked = client.post(f"/v1/sessions/{s}/turns", content=iter([b'{"input": "', b"y" * 4000, b'"}']))
    assert error(chunked, 413)["code"] == "body_too_large"
    assert client.get(f"/v1/sessions/{s}/messages").json()["data"] == []  # nothing was stored


def test_malformed_json_missing_and_unknown_fields_are_400_naming_the_field(client: httpx.Client) -> None:
    s = session(client)
    url = f"/v1/sessions/{s}/turns"
    assert error(client.post(url, content=b"{not json"), 400)["code"] == "invalid_json"
    assert error(client.post(url, content=b"[1, 2]"), 400)["code"] == "invalid_json"
    missing = error(client.post(url, json={}), 400)
    assert missing["code"] == "invalid_request" and missing["field"] == "input"
    unknown = error(client.post(url, json={"input": "hi", "temperature": 2}), 400)
    assert unknown["field"] == "temperature" and "input" in unknown["message"]
    wrong = error(client.post(url, json={"input": 42}), 400)
    assert wrong["field"] == "input"
    assert error(client.post("/v1/sessions", json={"title": "x"}), 400)["field"] == "title"
    assert error(client.get("/v1/runs/run_x/events?after=-1"), 404)["code"] == "not_found"


def test_under_busy_queue_a_second_turn_waits_and_runs_after_the_first(client: httpx.Client) -> None:
    s = session(client)
    first = turn(client, s, "first [sleep=1]")
    response = client.post(f"/v1/sessions/{s}/turns", json={"input": "second"})
    assert response.status_code == 202 and response.json()["status"] == "queued"
    second = str(response.json()["run_id"])
    assert wait_ended(client, second)["status"] == "completed"
    done_first = client.get(f"/v1/runs/{first}").json()
    assert done_first["status"] == "completed"
    assert done_first["ended_at"] <= client.get(f"/v1/runs/{second}").json()["ended_at"]
    assert [m["content"] for m in client.get(f"/v1/sessions/{s}/messages").json()["data"]] == [
        "first [sleep=1]",
        "echo: first [sleep=1]",
        "second",
        "echo: second",
    ]
    assert sse_events(client, f"/v1/runs/{second}/events")[0][1] == "run.started"
