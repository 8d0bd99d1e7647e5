"""Worker processes on the files backend: a worker killed mid-run (two `keel serve` processes
on one home), and `--workers 2` (two processes on one port)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx

from harness.testing.processes import keel_server, keel_servers
from tests.harness.serve.conftest import killed_worker_loses_nothing, turn, wait_ended, write_config


def test_a_worker_killed_mid_run_loses_nothing_and_the_next_turn_runs_on_another(
    model_url: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "keel.yaml", model_url, storage={"lease_wait_s": 3})
    home = tmp_path / "home"
    with keel_servers(config, home=home, count=2) as (a, b):
        killed_worker_loses_nothing(a, b)


def test_workers_2_runs_two_processes_on_one_port_sharing_the_home(model_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path / "keel.yaml", model_url)
    home = tmp_path / "home"
    with (
        keel_server(config, home=home, workers=2) as server,
        httpx.Client(base_url=server.url, timeout=30) as c,
    ):
        runs = []
        for i in range(12):
            with httpx.Client(base_url=server.url, timeout=30) as fresh:  # a new connection each time
                session = fresh.post("/v1/sessions").json()["id"]
                runs.append(turn(fresh, session, f"turn {i}"))
        assert all(wait_ended(c, run_id)["status"] == "completed" for run_id in runs)
        assert server.log.read_text().count("Application startup complete.") == 2  # two worker processes
    with sqlite3.connect(home / "serve.db") as db:
        stored = db.execute("SELECT count(*), count(DISTINCT worker) FROM serve_runs").fetchone()
    assert stored[0] == 12 and stored[1] in (1, 2)  # whichever process accepted each connection
