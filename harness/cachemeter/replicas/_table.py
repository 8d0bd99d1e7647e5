"""Rich table for `keel cache report --replicas`: one row per policy and fleet size."""

from __future__ import annotations

from rich.table import Table

from harness.cachemeter.pricing import money
from harness.cachemeter.replicas._run import ReplicaReport

__all__ = ["replica_table"]


def replica_table(report: ReplicaReport) -> Table:
    """Hit ratio, cost, routed-away misses and warm landings per (policy, servers), per simulator."""
    table = Table(
        title="replicas: hit ratio and cost per routing policy and number of servers",
        title_justify="left",
        caption="routed away: requests that landed on a server holding less of their prefix than another "
        "(tokens lost, their cost); warm: of the requests some server held a prefix of, the share "
        "sent to the server holding the longest",
        caption_justify="left",
    )
    table.add_column("routing")
    table.add_column("servers", justify="right")
    for name in report.simulators:
        for col in ("hit ratio", "cost", "routed away", "warm"):
            table.add_column(f"{name} {col}" if len(report.simulators) > 1 else col, justify="right")
    for policy in report.policies:
        for size in report.counts:
            if size == 1 and policy != report.policies[0]:
                continue  # one server: routing has no choice to make
            cells: list[str] = []
            for name in report.simulators:
                c = report.cell(policy, size, name)
                routed = f"{c.routed_requests:,} ({c.routed_lost:,} tok"
                routed += ")" if c.routed_cost is None else f", {money(c.routed_cost)})"
                cells += [f"{c.hit_ratio:.1%}", money(c.cost), routed, f"{c.warm_ratio:.0%}"]
            table.add_row("single server" if size == 1 else policy, str(size), *cells)
    return table
