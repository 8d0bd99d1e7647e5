"""The many-workers benchmark runs quick, end to end, and its invariants hold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_two_workers_lose_nothing_leak_nothing_and_rebuild_every_snapshot(
    tmp_path: Path, postgres_url: str
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "workers.py"),
            "--workers",
            "2",
            "--sessions",
            "4",
            "--turns",
            "3",
            "--users",
            "2",
            "--url",
            postgres_url,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    figures = dict(re.findall(r"^([a-z0-9_]+) (\d+(?:\.\d+)?)$", done.stdout, re.MULTILINE))
    for key in (
        "interleaved_turns",
        "memory_writes_lost",
        "messages_lost",
        "cross_user_leaks",
        "snapshot_mismatches",
    ):
        assert figures[key] == "0", key
    assert float(figures["turns_per_s_1"]) > 0 and float(figures["turns_per_s_2"]) > 0
    assert "errors 0" in done.stdout and "files left in worker homes: none" in done.stdout
