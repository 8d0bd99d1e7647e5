"""The plot: one line per chosen simulator, the misses marked where they happen, a PNG."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cachemeter import CanonicalRenderer, MeterReport, measure, plot_report
from harness.cachemeter.plot import plot_data
from harness.tokens import CharTokenizer
from harness.trace import TraceRecord, record_for_request
from harness.types import Message, ModelRequest, Purpose


def rec(n: int, *, system: str = "sys " * 50, purpose: Purpose = "turn") -> TraceRecord:
    messages = tuple(Message("user", f"m{k} " * 20) for k in range(n))
    return record_for_request(
        ModelRequest(system=system, messages=messages, purpose=purpose), session_id="s", turn=n, model="m"
    )


def report() -> MeterReport:
    records = [
        rec(1),
        rec(2),
        rec(3, system="sys " * 49 + "changed "),  # a mid-session change: a miss on every line
        rec(4, system="sys " * 49 + "changed "),
        rec(1, purpose="summary", system=""),
        rec(5, system="sys " * 49 + "changed "),
    ]
    return measure(records, CanonicalRenderer(CharTokenizer()), simulators=("ideal", "vllm", "llamacpp"))


def test_each_chosen_simulator_is_one_line_with_its_misses_marked() -> None:
    data = plot_data(report())
    assert [s.sim for s in data.series] == ["ideal", "vllm", "llamacpp"]
    assert len(data.prompt) == 6
    for series in data.series:
        assert len(series.cumulative) == 6
        assert (series.marks[0].x, series.marks[0].reason) == (2, "system_changed")
        assert all(m.y == series.cumulative[m.x] for m in series.marks)
    llamacpp = data.series[2]
    # The summary call took llama.cpp's one slot: the next turn lost its prefix to it.
    assert [(m.x, m.label) for m in llamacpp.marks][-2:] == [(4, "messages_changed:0"), (5, "evicted")]
    assert data.compressions == ((4, 4),)
    assert "renderer canonical" in data.title


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "plot.png"
    plot_report(report(), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000


def test_the_ttl_sweep_and_the_replicas_plot_as_pngs(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from harness.cachemeter import plot_replicas, plot_ttl_sweep, replica_sweep, ttl_sweep
    from harness.config import PriceConfig

    records = [rec(k) for k in range(1, 6)]
    renderer = CanonicalRenderer(CharTokenizer())
    prices = {"m": PriceConfig(input=1.0, output=2.0)}
    sweep = ttl_sweep(records, renderer, ttls=(30, 300), simulators=("sglang", "openai"), prices=prices)
    replicas = replica_sweep(records, renderer, counts=(1, 2), simulators=("sglang", "vllm"))
    plot_ttl_sweep(sweep, tmp_path / "ttl.png")
    plot_replicas(replicas, tmp_path / "replicas.png")
    for name in ("ttl.png", "replicas.png"):
        out = tmp_path / name
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert out.stat().st_size > 10_000
