"""What a compression cost, read from an arm's own trace with the cache meter.

For the flush request and the first turn request after the compression, per simulator: the
prompt tokens it could not reuse (re-prefilled) and the share it could; for the flush also
the cached tokens the provider itself reported. Wall seconds of the flush, the summary and
the first post-compression turn come from the trace's latencies; for a call whose reply was
shared from an identical earlier one (`SharedReplies`), from that original generation. Token counts are the
meter's (the canonical rendering in cl100k), the same yardstick for every arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from pydantic import JsonValue

from harness.cachemeter import MeterReport, MeterRun, RequestResult, SimName
from harness.trace import TraceRecord, read_trace

__all__ = ["CallCost", "CompressionCosts", "compression_costs", "costs_from"]


@dataclass(frozen=True, slots=True)
class CallCost:
    """One request: its size, what each simulator could not reuse, how long it took."""

    prompt_tokens: int
    reprefilled: dict[str, int]
    reported_cached: int | None
    """Cached prompt tokens the provider reported (None: it reported none)."""
    wall_s: float | None
    shared: bool = False
    """The reply came from an identical earlier request of the run; `wall_s` is that call's."""

    def reusable_share(self, sim: str) -> float:
        return 1 - self.reprefilled[sim] / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "reprefilled": dict(self.reprefilled),
            "reusable_share": {s: self.reusable_share(s) for s in self.reprefilled},
            "reported_cached": self.reported_cached,
            "wall_s": self.wall_s,
            "shared": self.shared,
        }


@dataclass(frozen=True, slots=True)
class CompressionCosts:
    """The first compression of an arm's trace: flush, summary, first turn after it."""

    flush: CallCost | None
    summary: CallCost | None
    first_turn: CallCost | None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "flush": None if self.flush is None else self.flush.to_json(),
            "summary": None if self.summary is None else self.summary.to_json(),
            "first_turn": None if self.first_turn is None else self.first_turn.to_json(),
        }


def _cost(row: RequestResult, records: Sequence[TraceRecord], shared: Sequence[float | None]) -> CallCost:
    reported = row.reported.cache_read if row.reported is not None else None
    index = row.line - 1
    original = shared[index] if len(shared) == len(records) else None
    return CallCost(
        prompt_tokens=row.prompt_tokens,
        reprefilled={s: row.prompt_tokens - r.reusable for s, r in row.sims.items()},
        reported_cached=reported,
        wall_s=records[index].latency_s if original is None else original,
        shared=original is not None,
    )


def _first(rows: Sequence[RequestResult], purpose: str, start: int = 0) -> int | None:
    return next((i for i in range(start, len(rows)) if rows[i].purpose == purpose), None)


def costs_from(
    report: MeterReport, records: Sequence[TraceRecord], shared: Sequence[float | None] = ()
) -> CompressionCosts:
    """The costs of the first compression in a metered trace (all None without one).

    `shared`: per trace record, the original wall seconds of a shared reply (None: the model
    ran); used only when it holds one entry per record.
    """
    rows = report.requests
    summary = _first(rows, "summary")
    if summary is None:
        return CompressionCosts(None, None, None)
    flush = _first(rows, "flush")
    turn = _first(rows, "turn", summary + 1)
    return CompressionCosts(
        flush=None if flush is None or flush > summary else _cost(rows[flush], records, shared),
        summary=_cost(rows[summary], records, shared),
        first_turn=None if turn is None else _cost(rows[turn], records, shared),
    )


async def compression_costs(
    path: Path | None,
    *,
    meter: MeterRun,
    sims: Sequence[SimName],
    shared: Sequence[float | None] = (),
) -> tuple[CompressionCosts, MeterReport | None]:
    """Meter one trace file and read the compression's costs off it (`shared`: see `costs_from`)."""
    if path is None:
        return CompressionCosts(None, None, None), None
    found = path
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(found)) if found.exists() else [])
    if not records:
        return CompressionCosts(None, None, None), None
    report = await meter.report_async(records, simulators=sims)
    return costs_from(report, records, shared), report
