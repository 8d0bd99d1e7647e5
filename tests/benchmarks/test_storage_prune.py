"""The storage benchmark fills its own store, and `keel storage prune --dry-run` then `prune` on it
remove the same half, on both backends."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_prune_benchmark_removes_the_old_half_on_both_backends(tmp_path: Path, postgres_url: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "storage_prune.py"),
            "--messages",
            "4000",
            "--url",
            postgres_url,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for backend in ("sqlite", "postgres"):
        assert f"[{backend}] keel storage prune --dry-run" in out
        dry = re.search(rf"\[{backend}\] keel storage prune --dry-run: .*would remove (\d+) messages", out)
        real = re.search(rf"\[{backend}\] keel storage prune: .*removed (\d+) messages", out)
        assert dry and real and dry.group(1) == real.group(1) == "2000"
        assert re.search(rf"\[{backend}\] again, --dry-run: .*Nothing to prune", out)
    assert re.search(r"^prune_seconds_per_million [\d.]+$", out.strip().splitlines()[-1])
