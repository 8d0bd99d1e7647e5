"""`run_python`: this interpreter in a real subprocess with this tree importable (a helper,
not collected by pytest)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["REPO", "run_python"]

REPO = Path(__file__).resolve().parents[1]


def run_python(
    *argv: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout_s: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python ARGV...` with `env` added to ours (and no `$KEEL_CONFIG` of the caller's); the
    finished process, which must have exited 0 (the test fails with its stderr otherwise)."""
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    if "KEEL_CONFIG" not in (env or {}):
        environ.pop("KEEL_CONFIG", None)
    done = subprocess.run(
        [sys.executable, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done
