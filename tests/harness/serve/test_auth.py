"""Keys and principals, and the loopback-only rule."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.testing.processes import KeelServer, free_port, keel_server
from tests.harness.serve.conftest import turn, wait_ended, write_config

KEYS = {"KEEL_TEST_KEY_ADA": "ada-secret", "KEEL_TEST_KEY_BOB": "bob-secret"}


@pytest.fixture(scope="module")
def keyed(model_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeelServer]:
    root = tmp_path_factory.mktemp("serve-keys")
    keys = [{"key_env": "KEEL_TEST_KEY_ADA", "user": "ada"}, {"key_env": "KEEL_TEST_KEY_BOB", "user": "bob"}]
    config = write_config(root / "keel.yaml", model_url, serve={"keys": keys})
    with keel_server(config, home=root / "home", env=KEYS) as s:
        yield s


def as_user(server: KeelServer, key: str | None) -> httpx.Client:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def test_no_key_or_a_wrong_key_is_401(keyed: KeelServer) -> None:
    for key in (None, "guess"):
        with as_user(keyed, key) as client:
            response = client.post("/v1/sessions")
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "unauthorized"
            assert client.get("/v1/models").status_code == 401
    with as_user(keyed, None) as client:
        assert client.get("/healthz").status_code == 200  # health needs no key


def test_another_principals_session_and_run_are_404(keyed: KeelServer) -> None:
    with as_user(keyed, "ada-secret") as ada, as_user(keyed, "bob-secret") as bob:
        session = ada.post("/v1/sessions").json()["id"]
        run_id = turn(ada, session, "mine")
        assert wait_ended(ada, run_id)["status"] == "completed"
        for response in (
            bob.get(f"/v1/sessions/{session}/messages"),
            bob.post(f"/v1/sessions/{session}/turns", json={"input": "yours?"}),
            bob.get(f"/v1/runs/{run_id}"),
            bob.get(f"/v1/runs/{run_id}/events"),
            bob.post(f"/v1/runs/{run_id}/cancel"),
            ada.get("/v1/sessions/no-such-session/messages"),
            ada.get("/v1/runs/run_nope"),
        ):
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "not_found"


def test_without_keys_a_public_address_is_refused_at_start(model_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path / "keel.yaml", model_url)
    command = [sys.executable, "-m", "harness", "--config", str(config), "--home", str(tmp_path / "h")]
    done = subprocess.run(
        [*command, "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "loopback" in done.stderr and "serve.keys" in done.stderr
