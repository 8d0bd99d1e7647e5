"""The LoCoMo recall benchmark runs end to end on one real conversation (semantic column included
when the embedder is installed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory.providers.semantic import embedder_unavailable_reason

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_benchmark_prints_both_sources_and_ends_with_the_headline(
    locomo_path: Path, tmp_path: Path
) -> None:
    out_json = tmp_path / "recall.json"
    script = REPO / "benchmarks" / "recall_locomo.py"
    args = [
        sys.executable,
        str(script),
        "--data",
        str(locomo_path),
        "--conversations",
        "1",
        "--json",
        str(out_json),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=280, check=True
    )
    lines = done.stdout.strip().splitlines()
    assert re.fullmatch(r"recall@5 (0|1)\.\d{4}", lines[-1])
    assert any(line.startswith("turns:") for line in lines)
    assert any(line.startswith("observations:") for line in lines)
    report = json.loads(out_json.read_text(encoding="utf-8"))
    headline = float(lines[-1].split()[1])
    assert report["turns"]["holographic"]["recall"] == pytest.approx(headline, abs=1e-4)
    rankings = {"holographic", "lexical", "fts-only"}
    if embedder_unavailable_reason() is None:
        rankings.add("semantic")
        values = dict(line.split() for line in lines if re.fullmatch(r"[a-z_0-9]+ -?\d+\.\d+", line))
        assert float(values["semantic_recall_at_5"]) == pytest.approx(
            report["turns"]["semantic"]["recall"], abs=1e-4
        )
        gain = float(values["semantic_recall_at_5"]) - float(values["fts_recall_at_5"])
        assert float(values["semantic_gain_over_fts_pp"]) == pytest.approx(gain * 100, abs=0.06)
        assert 0.0 < float(values["semantic_multihop_recall_at_5"]) <= 1.0
    assert set(report["observations"]) == rankings
    # Real retrieval finds evidence for a good share of questions; a broken ranking does not.
    assert headline > 0.3
