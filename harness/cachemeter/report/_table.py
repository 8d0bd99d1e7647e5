"""Rich tables for `keel cache report`: per request, per purpose, per phase, per compression, totals."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from harness.cachemeter.pricing import money
from harness.cachemeter.report._phases import PhaseTotals
from harness.cachemeter.report._report import MeterReport
from harness.cachemeter.report._results import PurposeTotals, RequestResult, SimTotals

__all__ = ["report_tables"]


def _top(t: SimTotals) -> str:
    """The costliest miss reason: by dollars when priced, else by tokens."""
    losses = [(label, r) for label, r in t.reasons.items() if label != "none" and r.lost > 0]
    if not losses:
        return ""
    label, r = max(losses, key=lambda kv: (kv[1].cost or 0.0, kv[1].lost))
    dollars = "" if r.cost is None else f", {money(r.cost)}"
    return f"{label} ({r.lost:,} tok{dollars}, {r.requests}×)"


def _totals(report: MeterReport) -> Table:
    table = Table(
        title=f"cache meter — {len(report.requests):,} requests, renderer {report.renderer}",
        title_justify="left",
        caption="write share: tokens written to the cache / prompt tokens (and the share of the cost "
        "spent on writes); top loss: the miss reason that cost most",
        caption_justify="left",
    )
    for col in ("simulator", "hit ratio", "write share", "reused tokens", "written", "cost", "top loss"):
        table.add_column(col, justify="left" if col in ("simulator", "top loss") else "right")
    prompt = sum(r.prompt_tokens for r in report.requests)
    for name, t in report.totals.items():
        share = f"{t.write_ratio:.1%}"
        if t.write_share is not None and t.write:
            share += f" ({t.write_share:.0%} of $)"
        table.add_row(
            name,
            f"{t.hit_ratio:.1%}",
            share,
            f"{t.reusable:,} / {prompt:,}",
            f"{t.write:,}",
            money(t.cost),
            _top(t),
        )
    if report.reported is not None:
        rep = report.reported
        written = rep.cache_write / rep.prompt_tokens if rep.prompt_tokens else 0.0
        table.add_row(
            Text("reported", style="italic"),
            f"{rep.hit_ratio:.1%}",
            f"{written:.1%}",
            f"{rep.cache_read:,} / {rep.prompt_tokens:,}",
            f"{rep.cache_write:,}",
            "",
            f"{rep.requests:,} requests with usage",
        )
    if report.uncached_cost is not None:
        note = f" ({report.unpriced_requests} unpriced)" if report.unpriced_requests else ""
        table.caption = f"{table.caption}\nwithout any cache: {money(report.uncached_cost)}{note}"
    return table


def _reason_costs(report: MeterReport) -> Table | None:
    """What each miss reason cost, per simulator (priced traces only)."""
    labels: dict[str, float] = {}
    for t in report.totals.values():
        for label, r in t.reasons.items():
            if label not in ("none", "first_request") and r.cost:
                labels[label] = labels.get(label, 0.0) + r.cost
    if not labels:
        return None
    table = Table(
        title="what each miss cost (tokens a cache could have read; $ over reading them)",
        title_justify="left",
    )
    table.add_column("reason")
    for name in report.simulators:
        table.add_column(name, justify="right")
    for label in sorted(labels, key=lambda k: -labels[k]):
        cells = []
        for name in report.simulators:
            got = report.totals[name].reasons.get(label)
            cells.append("" if got is None else f"{money(got.cost)} ({got.requests}×)")
        table.add_row(label, *cells)
    return table


def _hit_ratios(
    report: MeterReport, by: str, rows: Iterable[tuple[str, PhaseTotals | PurposeTotals]]
) -> Table:
    """Requests, prompt tokens and each simulator's hit ratio, a row per group (`by`: its name)."""
    table = Table(title=f"by {by} (hit ratio)", title_justify="left")
    table.add_column(by)
    table.add_column("requests", justify="right")
    table.add_column("prompt tokens", justify="right")
    for name in report.simulators:
        table.add_column(name, justify="right")
    for label, t in rows:
        table.add_row(
            label,
            f"{t.requests:,}",
            f"{t.prompt_tokens:,}",
            *(f"{t.hit_ratio(n):.1%}" for n in report.simulators),
        )
    return table


def _purposes(report: MeterReport) -> Table:
    return _hit_ratios(report, "purpose", report.by_purpose.items())


_PHASE_LABELS = {
    "cold": "cold start",
    "steady": "steady state",
    "flush": "flush calls",
    "summary": "summary calls",
    "rewarm": "re-warm after compression",
    "other": "other side calls",
}


def _phases(report: MeterReport) -> Table:
    phases = report.phases.phases.items()
    return _hit_ratios(report, "phase", ((_PHASE_LABELS.get(p, p), t) for p, t in phases if t.requests))


def _compressions(report: MeterReport) -> Table:
    table = Table(
        title="per compression: re-warm requests / cache breaks (tokens lost re-warming)",
        title_justify="left",
        caption="re-warm: turn requests after the compression until one reused the cache without a "
        "break; breaks: requests that broke, the compression's own flush and summary calls included",
        caption_justify="left",
    )
    table.add_column("#", justify="right")
    table.add_column("requests")
    table.add_column("calls")
    for name in report.simulators:
        table.add_column(name, justify="right")
    for c in report.phases.compressions:
        first, last = c.requests[0], c.requests[-1]
        cells = []
        for name in report.simulators:
            rewarm = c.rewarm[name]
            shown = "not back" if rewarm is None else str(rewarm)
            cells.append(f"{shown} / {c.breaks[name]} ({c.rewarm_lost[name]:,})")
        table.add_row(
            str(c.index + 1),
            f"{first}" if first == last else f"{first}–{last}",
            f"{c.flush} flush, {c.summary} summary",
            *cells,
        )
    return table


def _cell(r: RequestResult, name: str) -> Text:
    s = r.sims[name]
    text = Text(f"{s.reusable:,}")
    if s.reason.kind != "none":
        text.append(f"\n{s.reason.label}", style="yellow" if s.reason.kind != "first_request" else "dim")
    return text


def _requests(report: MeterReport, max_rows: int) -> Table:
    rows = list(report.requests)
    title = "per request (reused tokens, and why not more)"
    if len(rows) > max_rows:
        breaks = [
            r for r in rows if any(s.reason.kind not in ("none", "first_request") for s in r.sims.values())
        ]
        shown = breaks[:max_rows]
        title += f" — {len(shown)} of {len(rows):,} requests shown (breaks only; --json has all)"
        rows = shown
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("purpose")
    table.add_column("prompt", justify="right")
    table.add_column("reported", justify="right")
    for name in report.simulators:
        table.add_column(name, justify="right")
    for r in rows:
        reported = "" if r.reported is None else f"{r.reported.cache_read:,}"
        table.add_row(
            str(r.index),
            r.purpose,
            f"{r.prompt_tokens:,}",
            reported,
            *(_cell(r, n) for n in report.simulators),
        )
    return table


def report_tables(report: MeterReport, *, max_rows: int = 40) -> list[RenderableType]:
    """The report as rich tables: per request (at most `max_rows`), per purpose, per phase, per
    compression (when there was one), totals; then the renderer's notices and any warnings."""
    out: list[RenderableType] = []
    if max_rows > 0 and report.requests:
        out.append(_requests(report, max_rows))
    out.append(_purposes(report))
    out.append(_phases(report))
    if report.phases.compressions:
        out.append(_compressions(report))
    costs = _reason_costs(report)
    if costs is not None:
        out.append(costs)
    out.append(_totals(report))
    out.extend(Text(f"note: {notice}", style="cyan") for notice in report.notices)
    warned = sum(1 for r in report.requests if r.warnings)
    if warned:
        first = next(r for r in report.requests if r.warnings)
        out.append(
            Text(
                f"{warned} request(s) with warnings; first at line {first.line}: {first.warnings[0]}",
                style="yellow",
            )
        )
    return out
