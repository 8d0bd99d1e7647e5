"""A thin adapter: the cache meter one request at a time, until `harness.cachemeter` has its own.

`keel cache report` runs over a whole trace (`harness.cachemeter.report`); what telemetry
needs is the same verdict per request, as requests end. This adapter feeds requests through
the meter's own pieces — `Stream.prepare` (render, the content view), the simulator's
`feed`, `attribute` (the miss cause) — and assigns the phase by the rule of the report's
`report/_phases.py`. It is to be replaced by the meter's own per-request entry point.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cachemeter import Renderer, make_simulator, request_from_record
from harness.cachemeter.attribution import attribute
from harness.cachemeter.report._phases import PhaseName
from harness.cachemeter.report._results import BREAK_KINDS
from harness.cachemeter.report._stream import Stream
from harness.cachemeter.sim import SimName, SimStep, Simulator
from harness.trace import TraceRecord

__all__ = ["OnlineMeter", "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the report would say of one request: its phase, what one cache reused, and why not more."""

    phase: PhaseName
    reusable: int
    cause: str
    """The attribution's label: `none`, `first_request`, `system_changed:memory`, ..."""


class OnlineMeter:
    """One trace's meter fed request by request, in order, for one simulator."""

    def __init__(self, renderer: Renderer, sim: SimName) -> None:
        self._stream = Stream(renderer)
        self._sim: Simulator | None = None if sim == "ideal" else make_simulator(sim)
        self._count = 0
        self._warming = False

    def feed(self, record: TraceRecord) -> Verdict:
        i = self._count
        self._count += 1
        p = self._stream.prepare(i, request_from_record(record, line=i + 1))
        m = p.match
        step = (
            SimStep(reusable=m.prefix, prefix=m.prefix, source=m.source, potential=m.prefix)
            if self._sim is None
            else self._sim.feed(p.sim)
        )
        reason = attribute(p.content, step, n=p.rendered.n_tokens, shared=m.prefix)
        return Verdict(self._phase(record, p.content.kind), step.reusable, reason.label)

    def _phase(self, record: TraceRecord, content: str) -> PhaseName:
        purpose = record.purpose
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
