"""Where no PostgreSQL server answers, its tests skip with the reason — or fail under CI.

`.ci/run` sets `KEEL_TEST_REQUIRE_POSTGRES=1`, so a CI machine without its server cannot pass
by skipping the PostgreSQL tests. Checked here with a real pytest run against a port
nothing listens on.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
TARGET = "tests/memory/sessions/postgres/test_store.py::test_a_closed_store_says_so"


def run_pytest(extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("KEEL_TEST_REQUIRE_POSTGRES", "PYTEST_ADDOPTS")}
    env |= {"KEEL_TEST_POSTGRES_URL": f"postgresql://postgres@127.0.0.1:{port}/test", "PYTHONPATH": str(REPO)}
    env |= extra_env
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", TARGET],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_without_a_server_postgresql_tests_skip_with_the_reason() -> None:
    done = run_pytest({})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert "no PostgreSQL server answers" in done.stdout and "KEEL_TEST_POSTGRES_URL" in done.stdout


@pytest.mark.slow
def test_under_keel_require_postgres_a_missing_server_fails_the_run() -> None:
    done = run_pytest({"KEEL_TEST_REQUIRE_POSTGRES": "1"})
    assert done.returncode != 0
    assert "KEEL_TEST_REQUIRE_POSTGRES=1 but no PostgreSQL server answers" in done.stdout
