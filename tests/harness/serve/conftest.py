"""Fixtures for `keel serve`: the fake model endpoint (one per module) and config files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.testing.processes import KeelServer, fake_model


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    """A fake OpenAI-compatible endpoint in its own process."""
    with fake_model() as url:
        yield url


@pytest.fixture
def client(server: KeelServer) -> Iterator[httpx.Client]:
    """An httpx client of the module's `server` fixture."""
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


def write_config(path: Path, model_url: str, **sections: object) -> Path:
    """A config file using the fake model (`model.provider: openai` at its URL), plus `sections`."""
    config: dict[str, object] = {
        "model": {
            "provider": "openai",
            "base_url": model_url,
            "name": "fake-model",
            "tokenizer": "chars",
            "retry": {"max_attempts": 1},
        },
        **sections,
    }
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def sse_events(client: httpx.Client, url: str, **kwargs: object) -> list[tuple[int, str, dict[str, object]]]:
    """Read a whole SSE stream: `(id, event, data)` per event."""
    out: list[tuple[int, str, dict[str, object]]] = []
    with client.stream("GET", url, timeout=60, **kwargs) as response:  # type: ignore[arg-type]
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if line == "":
                if fields:
                    out.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
                fields = {}
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
    return out


def turn(client: httpx.Client, session: str, text: str, **headers: str) -> str:
    """POST a turn; its run id (asserts the 202)."""
    response = client.post(f"/v1/sessions/{session}/turns", json={"input": text}, headers=headers)
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


def wait_ended(client: httpx.Client, run_id: str) -> dict[str, object]:
    """The run once it ended (its event stream read to the end first)."""
    sse_events(client, f"/v1/runs/{run_id}/events")
    body: dict[str, object] = client.get(f"/v1/runs/{run_id}").json()
    return body


def first_started(client: httpx.Client, run_id: str, timeout_s: float = 30.0) -> None:
    """Wait until the run's `run.started` event is in the store (read through `client`)."""
    with client.stream("GET", f"/v1/runs/{run_id}/events", timeout=timeout_s) as response:
        for line in response.iter_lines():
            if line == "event: run.started":
                return
    raise AssertionError(f"run {run_id} ended without starting")


def killed_worker_loses_nothing(a: KeelServer, b: KeelServer) -> None:
    """SIGKILL `a` mid-run: `b` fails the run as `worker_lost`, serves its events, runs the next turn."""
    with httpx.Client(base_url=a.url, timeout=30) as ca, httpx.Client(base_url=b.url, timeout=30) as cb:
        session = str(ca.post("/v1/sessions").json()["id"])
        run_id = turn(ca, session, "a long one [sleep=60]")
        first_started(cb, run_id)
        busy = cb.post(f"/v1/sessions/{session}/turns", json={"input": "meanwhile"})
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "session_busy"
        a.kill()
        events = sse_events(cb, f"/v1/runs/{run_id}/events")
        assert events[0][1] == "run.started"
        assert events[-1][1] == "run.failed" and events[-1][2]["error"]["code"] == "worker_lost"  # type: ignore[index]
        run = cb.get(f"/v1/runs/{run_id}").json()
        assert run["status"] == "failed" and run["error"]["code"] == "worker_lost"
        assert run["input"] == "a long one [sleep=60]"  # the acknowledged input is kept
        assert (
            wait_ended(cb, turn(cb, session, "on the other worker"))["output"] == "echo: on the other worker"
        )
