"""The cache lifecycle benchmark runs quick and the controller cuts the 5-minute TTL's cost."""

from __future__ import annotations

import re
from pathlib import Path

from tests.benchmarks.script import run_benchmark


def test_the_controller_cuts_cost_and_re_writes_on_the_gap_heavy_replay(tmp_path: Path) -> None:
    out = run_benchmark("cache_lifecycle.py", "--sessions", "4", "--turns", "6", cwd=tmp_path)
    lines = out.strip().splitlines()
    rows = {
        (m.group(1), m.group(2)): m
        for line in lines
        if (
            m := re.match(
                r"(\S+ ?\S*)\s{2,}(\S+(?: \(both\))?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d,]+)", line
            )
        )
    }
    off, warm = rows[("anthropic 5m", "off")], rows[("anthropic 5m", "keep-warm")]
    assert float(warm.group(3)) < float(off.group(3))
    assert int(warm.group(6).replace(",", "")) < int(off.group(6).replace(",", ""))
    ratio = re.fullmatch(r"anthropic_5m_cost_ratio ([\d.]+)", lines[-1])
    assert ratio and 0 < float(ratio.group(1)) < 1
