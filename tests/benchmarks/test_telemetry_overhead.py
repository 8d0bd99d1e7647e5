"""The telemetry overhead benchmark runs quick, end to end, through a real OTLP receiver."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_quick_run_prints_both_sides_and_its_last_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "telemetry_overhead.py"), "--turns", "5", "--rounds", "1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sum("export off: median" in line for line in lines) == 2
    assert sum("export on:  median" in line for line in lines) == 2
    assert re.fullmatch(r"added_share_at_1000 -?\d+\.\d{4}", lines[-1])
