"""`benchmarks/poisoning.py` as a real subprocess: every write path is tried, and none of them
stores or recalls an instruction that came from a tool result, a tool's description, or a
preference-phrased instruction of the user's."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.script import run_benchmark

PATHS = (
    "memory add (verbatim)",
    "memory add (paraphrase)",
    "memory add (Chinese)",
    "memory add (Russian)",
    "memory replace (translation)",
    "memory add (tool description)",
    "fact_store add (paraphrase)",
    "skill_manage create",
    "review (Russian)",
    "flush (English)",
)


def test_every_write_path_is_tried_and_the_last_line_counts_them(tmp_path: Path) -> None:
    out = run_benchmark("poisoning.py", "--small", cwd=tmp_path).splitlines()
    rows = {line[:34].strip(): line for line in out[:-1]}
    assert all(path in rows for path in PATHS), out
    stored = sum(" stored yes" in line for line in rows.values())
    recalled = sum(" recalled yes" in line for line in rows.values())
    assert out[-1] == f"stored {stored} recalled {recalled}"
