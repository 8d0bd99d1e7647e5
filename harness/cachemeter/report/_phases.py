"""Per-phase figures: steady state, side calls, and what each compression costs the cache.

Every request falls in one phase, decided by purpose and by the content view (the `ideal`
attribution, the same for every simulator):

    cold     the first request (of its model): nothing can be cached yet
    flush    flush calls             summary   summary calls      other   any other side call
    rewarm   turn requests right after a compression whose content broke the prefix (the new
             system prompt and the summary), until the first turn request that did not break
    steady   every other turn request — the state a long session spends its time in

A *compression* is a run of consecutive flush/summary calls. For each one and each
simulator the report gives:

    rewarm       turn requests after it until that simulator served one without a break
                 (`BREAK_KINDS`), the warm one not counted; None when the trace (or the
                 next compression) came first
    rewarm_lost  prompt tokens those requests could not reuse
    breaks       requests that broke for that simulator, from the first side call to the
                 end of its re-warm

So a compression that changes the system prompt exactly once costs `rewarm` 1, and a flush
that keeps the conversation's prefix (`compression.flush: cache_safe`) adds no break.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

from pydantic import JsonValue

from harness.cachemeter._share import share
from harness.cachemeter.report._results import BREAK_KINDS, RequestResult
from harness.types import JsonObject

__all__ = [
    "PHASES",
    "CompressionPhase",
    "PhaseClock",
    "PhaseName",
    "PhaseReport",
    "PhaseTotals",
    "phase_report",
]

PhaseName: TypeAlias = Literal["cold", "steady", "flush", "summary", "rewarm", "other"]
PHASES: tuple[PhaseName, ...] = get_args(PhaseName)


@dataclass(frozen=True, slots=True)
class PhaseTotals:
    """The requests of one phase and what each simulator reused of them."""

    requests: int
    prompt_tokens: int
    reusable: dict[str, int]

    def hit_ratio(self, sim: str) -> float:
        return share(self.reusable[sim], self.prompt_tokens)


@dataclass(frozen=True, slots=True)
class CompressionPhase:
    """One compression: its side calls, and the re-warm after it, per simulator."""

    index: int
    requests: tuple[int, ...]
    """Report indices of its flush and summary calls."""
    flush: int
    summary: int
    rewarm: dict[str, int | None]
    rewarm_lost: dict[str, int]
    breaks: dict[str, int]


@dataclass(frozen=True, slots=True)
class PhaseReport:
    """Totals per phase, and one entry per compression."""

    phases: dict[str, PhaseTotals]
    compressions: tuple[CompressionPhase, ...]
    assignment: tuple[PhaseName, ...]
    """The phase of each request, by report index."""

    def to_json(self) -> JsonObject:
        phases: dict[str, JsonValue] = {
            name: {
                "requests": t.requests,
                "prompt_tokens": t.prompt_tokens,
                "sims": {s: {"reusable": r, "hit_ratio": t.hit_ratio(s)} for s, r in t.reusable.items()},
            }
            for name, t in self.phases.items()
        }
        compressions: list[JsonValue] = [
            {
                "index": c.index,
                "requests": list(c.requests),
                "flush": c.flush,
                "summary": c.summary,
                "sims": {
                    s: {"rewarm": c.rewarm[s], "rewarm_lost": c.rewarm_lost[s], "breaks": c.breaks[s]}
                    for s in c.rewarm
                },
            }
            for c in self.compressions
        ]
        return {"phases": phases, "compressions": compressions}


def _is_side(r: RequestResult) -> bool:
    return r.purpose in ("flush", "summary")


class PhaseClock:
    """The phase rule above, one request at a time: the report and telemetry both use it."""

    def __init__(self) -> None:
        self._warming = False

    def phase(self, purpose: str, content: str) -> PhaseName:
        """The phase of the next request, by its purpose and its content view's kind."""
        if purpose in ("flush", "summary"):
            self._warming = True
            return "flush" if purpose == "flush" else "summary"
        if content == "first_request":
            return "cold"
        if purpose != "turn":
            return "other"
        if self._warming and content in BREAK_KINDS:
            return "rewarm"
        self._warming = False
        return "steady"


def _assign(rows: Sequence[RequestResult]) -> tuple[list[PhaseName], list[tuple[int, int]]]:
    """Each request's phase, and the (start, stop) index range of each compression's calls."""
    clock = PhaseClock()
    phases: list[PhaseName] = []
    runs: list[tuple[int, int]] = []
    for i, r in enumerate(rows):
        if _is_side(r):
            if runs and runs[-1][1] == i:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
        phases.append(clock.phase(r.purpose, r.content.kind))
    return phases, runs


def _compression(
    k: int, run: tuple[int, int], rows: Sequence[RequestResult], end: int, names: Sequence[str]
) -> CompressionPhase:
    """Figures of compression `k` (calls `run`); its re-warm may last until index `end`."""
    calls = rows[run[0] : run[1]]
    turns = [r for r in rows[run[1] : end] if r.purpose == "turn"]
    rewarm: dict[str, int | None] = {}
    lost: dict[str, int] = {}
    breaks: dict[str, int] = {}
    for name in names:
        warm_at = next((j for j, r in enumerate(turns) if not r.sims[name].is_break), None)
        paid = turns if warm_at is None else turns[:warm_at]
        rewarm[name] = warm_at
        lost[name] = sum(r.prompt_tokens - r.sims[name].reusable for r in paid)
        breaks[name] = sum(1 for r in (*calls, *paid) if r.sims[name].is_break)
    return CompressionPhase(
        index=k,
        requests=tuple(r.index for r in calls),
        flush=sum(1 for r in calls if r.purpose == "flush"),
        summary=sum(1 for r in calls if r.purpose == "summary"),
        rewarm=rewarm,
        rewarm_lost=lost,
        breaks=breaks,
    )


def phase_report(rows: Sequence[RequestResult], names: Sequence[str]) -> PhaseReport:
    """Assign every request its phase and measure each compression (see the module doc)."""
    assignment, runs = _assign(rows)
    phases: dict[str, PhaseTotals] = {}
    for phase in PHASES:
        members = [r for r, p in zip(rows, assignment, strict=True) if p == phase]
        phases[phase] = PhaseTotals(
            requests=len(members),
            prompt_tokens=sum(r.prompt_tokens for r in members),
            reusable={n: sum(r.sims[n].reusable for r in members) for n in names},
        )
    ends = [start for start, _ in runs[1:]] + [len(rows)] if runs else []
    compressions = tuple(
        _compression(k, run, rows, end, names) for k, (run, end) in enumerate(zip(runs, ends, strict=True))
    )
    return PhaseReport(phases, compressions, tuple(assignment))
