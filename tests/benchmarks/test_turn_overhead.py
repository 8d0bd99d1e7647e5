"""The turn overhead benchmark's single-session mode runs quick, end to end."""

from __future__ import annotations

import re
from pathlib import Path

from tests.benchmarks.script import run_benchmark


def test_single_session_mode_prints_the_cpu_per_turn(tmp_path: Path) -> None:
    lines = run_benchmark("turn_overhead.py", "--single-session", "--turns", "3", cwd=tmp_path).splitlines()
    assert "one session, 3 turns of one tool call each: median" in lines[0]
    assert re.fullmatch(r"single_session_cpu_ms_per_turn \d+\.\d{3}", lines[-1])
