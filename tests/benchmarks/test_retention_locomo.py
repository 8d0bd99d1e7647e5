"""The retention benchmark's report: the per-depth table and the headline as the last line."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.experiments.retention.longrun import LongState
from harness.experiments.retention.outcomes import Outcome

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.retention_locomo import report


def _outcomes(arm: str, values: list[float]) -> list[Outcome]:
    return [
        Outcome("r", arm, 2, f"i{n}", "fact", 1 + n % 2, v, ("memory",) if v else (), True)
        for n, v in enumerate(values)
    ]


def test_the_report_ends_with_the_gain_of_the_best_arm_and_its_lower_bound() -> None:
    state = LongState(
        outcomes=[
            *_outcomes("off", [0.0] * 20),
            *_outcomes("memory_only", [1.0] * 15 + [0.0] * 5),
            *_outcomes("forced", [1.0] * 5 + [0.0] * 15),
        ]
    )
    lines = report(state, ["off", "memory_only", "forced"])
    assert lines[-1].startswith("retention_gain 0.7500 ci_low 0.")
    assert lines[-1].endswith(" wrong_memories 0")
    low = float(lines[-1].split()[3])
    assert 0.5 < low < 0.75
    assert "memory_only" in lines[-2]
    rows = [line.split() for line in lines[1:-2] if "wrong_memories" not in line]
    # per arm: depth 1, depth 2, and `last` (every item after the last compression)
    assert [(r[0], r[1]) for r in rows if r[0] == "memory_only"] == [
        ("memory_only", "1"),
        ("memory_only", "2"),
        ("memory_only", "last"),
    ]


def test_without_off_there_is_no_gain() -> None:
    state = LongState(outcomes=_outcomes("memory_only", [1.0, 0.0]))
    assert report(state, ["memory_only"])[-1] == "retention_gain - ci_low - wrong_memories -"
