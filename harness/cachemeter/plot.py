"""PNG plot: cumulative cached vs. uncached prompt tokens per request, one line pair per simulator.

matplotlib is an optional extra (`pip install -e '.[plot]'`), imported only when plotting.
"""

from __future__ import annotations

from itertools import accumulate
from pathlib import Path

from harness.cachemeter._errors import MeterError
from harness.cachemeter.report import MeterReport

__all__ = ["plot_report"]


def plot_report(report: MeterReport, path: Path) -> None:
    """Write the plot to `path` (PNG). Blocking; run it in a worker thread from async code.

    Raises:
        MeterError: matplotlib is not installed, or the file cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never open a window
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MeterError("plotting needs matplotlib; pip install -e '.[plot]' (or drop --plot)") from exc
    x = list(range(len(report.requests)))
    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=110)
    try:
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for k, name in enumerate(report.simulators):
            color = colors[k % len(colors)]
            cached = list(accumulate(r.sims[name].reusable for r in report.requests))
            uncached = list(accumulate(r.prompt_tokens - r.sims[name].reusable for r in report.requests))
            ratio = report.totals[name].hit_ratio
            ax.plot(x, cached, color=color, label=f"{name} cached ({ratio:.0%})")
            ax.plot(x, uncached, color=color, linestyle="--", label=f"{name} uncached")
        ax.set_xlabel("request")
        ax.set_ylabel("cumulative prompt tokens")
        ax.set_title(f"prefix-cache reuse — {len(report.requests):,} requests, renderer {report.renderer}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", ncol=2)
        fig.tight_layout()
        try:
            fig.savefig(path, format="png")
        except OSError as exc:
            raise MeterError(f"cannot write the plot to {str(path)!r}: {exc}") from exc
    finally:
        plt.close(fig)
