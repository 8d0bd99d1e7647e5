"""The storage benchmark fills its own store, and `keel storage prune --dry-run` then `prune` on it
remove the same half, on both backends."""

from __future__ import annotations

import re
from pathlib import Path

from tests.benchmarks.script import run_benchmark


def test_the_prune_benchmark_removes_the_old_half_on_both_backends(tmp_path: Path, postgres_url: str) -> None:
    out = run_benchmark("storage_prune.py", "--messages", "4000", "--url", postgres_url, cwd=tmp_path)
    for backend in ("sqlite", "postgres"):
        assert f"[{backend}] keel storage prune --dry-run" in out
        dry = re.search(rf"\[{backend}\] keel storage prune --dry-run: .*would remove (\d+) messages", out)
        real = re.search(rf"\[{backend}\] keel storage prune: .*removed (\d+) messages", out)
        assert dry and real and dry.group(1) == real.group(1) == "2000"
        assert re.search(rf"\[{backend}\] again, --dry-run: .*Nothing to prune", out)
    assert re.search(r"^prune_seconds_per_million [\d.]+$", out.strip().splitlines()[-1])
