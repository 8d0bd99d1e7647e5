"""Rich tables for `keel cache report --ttl-sweep`: one per simulator, one row per timeout."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table

from harness.cachemeter.pricing import money
from harness.cachemeter.sweep._sweep import TtlCell, TtlSweep, format_ttl

__all__ = ["sweep_tables"]

_AS_GIVEN = {
    "openai": "as configured",
    "anthropic": "as sent",
    "vllm": "no timeout",
    "sglang": "no timeout",
    "llamacpp": "no timeout",
    "llamacpp-ram": "no timeout",
}


def _row(label: str, c: TtlCell) -> list[str]:
    return [
        label,
        f"{c.hit_ratio:.1%}",
        f"{c.write_ratio:.1%}",
        money(c.cost),
        f"{c.idle_requests:,}",
        f"{c.idle_lost:,}",
        money(c.idle_cost),
        f"{c.keepalive_pings:,}",
        money(c.keepalive_cost),
        money(c.keepalive_net),
    ]


def _one_hour(sweep: TtlSweep) -> str:
    """What every Anthropic entry at the 1-hour TTL would have cost against the trace as sent."""
    if 3600.0 not in sweep.ttls:
        return ""
    hour = sweep.rows["anthropic"][sweep.ttls.index(3600.0)].cost
    sent = sweep.as_given["anthropic"].cost
    if hour is None or sent is None:
        return ""
    verb = "saves" if hour <= sent else "costs"
    return f"\nthe 1-hour TTL on every entry: {money(hour)} instead of {money(sent)} ({verb} {money(abs(sent - hour))})"


def sweep_tables(sweep: TtlSweep) -> list[RenderableType]:
    """One table per simulator: the trace as it was, then each timeout of the sweep."""
    out: list[RenderableType] = []
    for name in sweep.simulators:
        caption = (
            "idle misses: requests whose shared prefix had expired (a gap longer than the timeout); "
            "keep-alive: one-token requests re-reading the prefix before each expiry, and what "
            "they would have saved net"
        )
        if name == "anthropic":
            caption += (
                "; Anthropic sells 5 m and 1 h, other timeouts are what-ifs (writes billed at the "
                "5 m price up to 5 m, the 1 h price above)"
            )
            caption += _one_hour(sweep)
        table = Table(
            title=f"{name}: hit ratio and cost against the cache timeout",
            title_justify="left",
            caption=caption,
            caption_justify="left",
        )
        for col in (
            "timeout",
            "hit ratio",
            "write share",
            "cost",
            "idle misses",
            "tokens lost",
            "idle cost",
            "keep-alive pings",
            "keep-alive cost",
            "keep-alive saves",
        ):
            table.add_column(col, justify="left" if col == "timeout" else "right")
        table.add_row(*_row(_AS_GIVEN.get(name, "as given"), sweep.as_given[name]))
        for ttl, cell in zip(sweep.ttls, sweep.rows[name], strict=True):
            table.add_row(*_row(format_ttl(ttl), cell))
        out.append(table)
    return out
