"""The turn overhead benchmark's single-session mode runs quick, end to end, and leaves a trace."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_single_session_mode_prints_the_cpu_per_turn(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "turn_overhead.py"), "--single-session", "--turns", "3"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "one session, 3 turns of one tool call each: median" in lines[0]
    assert re.fullmatch(r"single_session_cpu_ms_per_turn \d+\.\d{3}", lines[-1])
