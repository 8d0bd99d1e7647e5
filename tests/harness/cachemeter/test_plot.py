"""The PNG plot of cumulative cached vs. uncached tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cachemeter import CanonicalRenderer, measure, plot_report
from harness.tokens import CharTokenizer
from harness.trace import record_for_request
from harness.types import Message, ModelRequest


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    records = [
        record_for_request(
            ModelRequest(
                system="sys " * 50, messages=tuple(Message("user", f"m{k} " * 20) for k in range(n))
            ),
            session_id="s",
            turn=n,
            model="m",
        )
        for n in range(1, 6)
    ]
    report = measure(records, CanonicalRenderer(CharTokenizer()), simulators=("ideal", "vllm"))
    out = tmp_path / "plot.png"
    plot_report(report, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000
