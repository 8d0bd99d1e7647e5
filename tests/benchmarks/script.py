"""Run a benchmark script as a real subprocess of this tree (a helper, not collected by pytest)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["run_benchmark"]

REPO = Path(__file__).resolve().parents[2]


def run_benchmark(script: str, *args: str, cwd: Path, timeout_s: float = 280) -> str:
    """`python benchmarks/<script> args...` in `cwd`; its stdout (fails the test on a non-zero exit)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=cwd,
        timeout=timeout_s,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout
