"""The serve load benchmark runs small: two servers, a SIGKILL, and nothing lost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.benchmarks.script import run_benchmark


@pytest.mark.slow
def test_two_servers_lose_nothing_under_load_and_a_kill(tmp_path: Path, postgres_url: str) -> None:
    out = run_benchmark(
        "serve_load.py", "--sessions", "4", "--turns", "2", "--url", postgres_url, cwd=tmp_path
    )
    figures = dict(re.findall(r"^(\w+): (\d+)$", out, flags=re.MULTILINE))
    assert figures == {
        "runs_failed": "0",
        "events_lost": "0",
        "duplicated_turns": "0",
        "acknowledged_inputs_lost": "0",
        "next_turns_failed": "0",
    }
    assert re.search(r"turns: 8 in [\d.]+ s", out)
    assert "killed worker: 4 runs in flight" in out
