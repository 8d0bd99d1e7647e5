"""PNG plot: cumulative reused prompt tokens per request, one line per simulator, misses marked.

Each chosen simulator is one line (cumulative tokens it reused); a grey dashed line is the
cumulative prompt, what a cacheless server processes. Where a simulator lost tokens to a
break (`BREAK_KINDS`: a changed model, tools, system prompt or message, an eviction, an
expired TTL) its line carries a marker whose shape names the reason; compressions (runs of
flush/summary calls) are shaded. `plot_data` computes all of it without matplotlib (tests
and other front ends use it); `plot_report` draws it.

matplotlib is an optional extra (`pip install -e '.[plot]'`), imported only when plotting.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from harness.cachemeter._errors import MeterError
from harness.cachemeter.report import BREAK_KINDS, MeterReport

__all__ = ["PlotData", "PlotMark", "PlotSeries", "plot_data", "plot_report"]

# One marker shape per break reason, so the legend can name them once for all lines.
_MARKERS: dict[str, str] = {
    "model_changed": "X",
    "tools_changed": "s",
    "system_changed": "v",
    "messages_changed": "D",
    "evicted": "o",
    "ttl_expired": "^",
}


@dataclass(frozen=True, slots=True)
class PlotMark:
    """A miss drawn on a simulator's line: at request `x`, height `y`, for `reason`."""

    x: int
    y: int
    reason: str
    label: str


@dataclass(frozen=True, slots=True)
class PlotSeries:
    sim: str
    hit_ratio: float
    cumulative: tuple[int, ...]
    marks: tuple[PlotMark, ...]


@dataclass(frozen=True, slots=True)
class PlotData:
    """Everything the plot shows."""

    title: str
    prompt: tuple[int, ...]
    series: tuple[PlotSeries, ...]
    compressions: tuple[tuple[int, int], ...]
    """Request index ranges [start, end] of each compression's side calls."""


def plot_data(report: MeterReport) -> PlotData:
    """The lines, miss marks and compression spans of a report."""
    series: list[PlotSeries] = []
    for name in report.simulators:
        cumulative = tuple(accumulate(r.sims[name].reusable for r in report.requests))
        marks = tuple(
            PlotMark(r.index, cumulative[r.index], r.sims[name].reason.kind, r.sims[name].reason.label)
            for r in report.requests
            if r.sims[name].reason.kind in BREAK_KINDS
        )
        series.append(PlotSeries(name, report.totals[name].hit_ratio, cumulative, marks))
    spans = tuple((c.requests[0], c.requests[-1]) for c in report.phases.compressions if c.requests)
    title = f"prefix-cache reuse — {len(report.requests):,} requests, renderer {report.renderer}" + (
        f", tokenizer {report.tokenizer}" if report.tokenizer else ""
    )
    return PlotData(
        title=title,
        prompt=tuple(accumulate(r.prompt_tokens for r in report.requests)),
        series=tuple(series),
        compressions=spans,
    )


def plot_report(report: MeterReport, path: Path) -> None:
    """Write the plot to `path` (PNG). Blocking; run it in a worker thread from async code.

    Raises:
        MeterError: matplotlib is not installed, or the file cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never open a window
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
    except ImportError as exc:
        raise MeterError("plotting needs matplotlib; pip install -e '.[plot]' (or drop --plot)") from exc
    data = plot_data(report)
    x = list(range(len(data.prompt)))
    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=110)
    try:
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        ax.plot(x, data.prompt, color="0.6", linestyle="--", linewidth=1, label="prompt tokens (no cache)")
        for start, end in data.compressions:
            ax.axvspan(start - 0.5, end + 0.5, color="0.85", zorder=0)
        seen: set[str] = set()
        n = len(data.series)
        for k, s in enumerate(data.series):
            color = colors[k % len(colors)]
            # Lines that coincide (ideal, sglang, vllm often do) stay visible: earlier ones are wider.
            width = 1.2 + 1.4 * (n - 1 - k) / max(n - 1, 1)
            ax.plot(
                x, s.cumulative, color=color, linewidth=width, label=f"{s.sim} ({s.hit_ratio:.0%} reused)"
            )
            for mark in s.marks:
                seen.add(mark.reason)
                ax.plot(
                    [mark.x],
                    [mark.y],
                    marker=_MARKERS[mark.reason],
                    color=color,
                    markersize=6,
                    markeredgecolor="black",
                    markeredgewidth=0.5,
                    linestyle="none",
                )
        ax.set_xlabel("request")
        ax.set_ylabel("cumulative prompt tokens")
        ax.set_title(data.title)
        ax.grid(True, alpha=0.3)
        lines = ax.legend(fontsize="small", loc="upper left")
        ax.add_artist(lines)
        handles = [
            Line2D([], [], marker=_MARKERS[r], color="0.3", linestyle="none", label=r.replace("_", " "))
            for r in _MARKERS
            if r in seen
        ]
        if data.compressions:
            handles.append(Line2D([], [], color="0.85", linewidth=8, label="compression (flush, summary)"))
        if handles:
            ax.legend(
                handles=handles,
                fontsize="small",
                loc="lower right",
                title="miss reasons",
                title_fontsize="small",
            )
        fig.tight_layout()
        try:
            fig.savefig(path, format="png")
        except OSError as exc:
            raise MeterError(f"cannot write the plot to {str(path)!r}: {exc}") from exc
    finally:
        plt.close(fig)
