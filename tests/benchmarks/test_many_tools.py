"""The many-tools benchmark runs quick, end to end: deferral keeps the prefix byte-stable and
sends far fewer prompt tokens than every schema would, and the agent still finds its tools."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_deferral_sends_fewer_tokens_keeps_the_prefix_and_finds_the_tools(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "many_tools.py"), "--tasks", "3"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        line.split()[0]: line.split()
        for line in done.stdout.splitlines()
        if line.startswith(("sent ", "deferred ")) and line.split()[1].isdigit()
    }
    # the tool list and the system text byte-identical from the first request to the last
    assert rows["sent"][5] == "yes" and rows["deferred"][5] == "yes"
    assert rows["sent"][6] == "3/3" and rows["deferred"][6] == "3/3"
    ratio = re.search(r"median prompt tokens: ([0-9.]+)", done.stdout)
    assert ratio is not None and float(ratio.group(1)) < 0.5
