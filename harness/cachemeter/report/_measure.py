"""The report's pass over the meter's stream: every simulator on every request, attributed.

`ReportPass.feed` takes each prepared request (`harness.cachemeter.stream`), runs the
simulators on it, attributes each miss and prices it; `finish` totals per simulator, per
purpose and per phase into a `MeterReport`. The run that drives it — reading the trace once,
rendering each request once, feeding this pass beside the TTL sweep and the replicas — is
`harness.cachemeter.run.MeterRun`.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.cachemeter.attribution import attribute
from harness.cachemeter.pricing import Pricer, RequestPrice, add_cost, billed_ttl
from harness.cachemeter.report._phases import phase_report
from harness.cachemeter.report._report import MeterReport
from harness.cachemeter.report._results import (
    PurposeTotals,
    ReasonTotals,
    ReportedTotals,
    RequestResult,
    SimResult,
    SimTotals,
)
from harness.cachemeter.sim import SimName, SimSettings, SimStep, Simulator, make_simulator
from harness.cachemeter.stream import Prepared

__all__ = ["ReportPass"]


class ReportPass:
    """The state of the report over one trace: its simulators, and each request's result."""

    def __init__(self, names: Sequence[SimName], settings: SimSettings, pricer: Pricer) -> None:
        self.names = tuple(dict.fromkeys(names))
        self.settings = settings
        self.pricer = pricer
        self.sims: dict[str, Simulator] = {
            n: make_simulator(n, settings=settings) for n in self.names if n != "ideal"
        }
        self.rows: list[RequestResult] = []

    def feed(self, p: Prepared) -> None:
        """Simulate, attribute and price one request."""
        req = p.request
        output = req.usage.output if req.usage is not None else 0
        price = self.pricer.request(
            req.model, prompt=p.rendered.n_tokens, output=output, ttl=billed_ttl(req.cache_ttl, self.settings)
        )
        results, warnings = self._simulate(p, price)
        self.rows.append(
            RequestResult(
                index=p.index,
                line=req.line,
                session_id=req.session_id,
                turn=req.turn,
                purpose=req.purpose,
                model=req.model,
                timestamp=req.timestamp,
                prompt_tokens=p.rendered.n_tokens,
                reported=req.usage,
                price=price.entry,
                content=p.content,
                sims=results,
                warnings=tuple(warnings),
                ttl=price.ttl,
                gap=p.gap,
            )
        )

    def _simulate(self, p: Prepared, price: RequestPrice) -> tuple[dict[str, SimResult], list[str]]:
        results: dict[str, SimResult] = {}
        warnings = list(p.rendered.warnings)
        n = p.rendered.n_tokens
        for name in self.names:
            if name == "ideal":
                m = p.match
                step = SimStep(reusable=m.prefix, prefix=m.prefix, source=m.source, potential=m.prefix)
            else:
                step = self.sims[name].feed(p.sim)
            reason = attribute(p.content, step, n=n, shared=p.match.prefix)
            results[name] = SimResult(
                step.reusable,
                step.write,
                step.prefix,
                step.source,
                reason,
                step.warnings,
                cost=price.cost(reusable=step.reusable, write=step.write),
                lost_cost=price.lost(reusable=step.reusable, write=step.write, lost=reason.lost),
                write_cost=price.write_cost(write=step.write),
            )
            warnings.extend(w for w in step.warnings if w not in warnings)
        return results, warnings

    def finish(self, *, renderer: str, tokenizer: str, notices: Sequence[str]) -> MeterReport:
        """The report of every request fed so far."""
        rows, names = self.rows, self.names
        totals = _Totals(rows, names, self.pricer)
        return MeterReport(
            renderer=renderer,
            tokenizer=tokenizer,
            simulators=names,
            settings=self.settings,
            requests=tuple(rows),
            totals={name: totals.sim(name) for name in names},
            by_purpose=totals.by_purpose(),
            reported=totals.reported(),
            unpriced_requests=(
                sum(1 for r in rows if r.price is None) if self.pricer.prices is not None else len(rows)
            ),
            uncached_cost=totals.uncached(),
            phases=phase_report(rows, names),
            notices=tuple(notices),
        )


class _Totals:
    """Sums over the requests of a trace: per simulator, per purpose, reported, cost."""

    def __init__(self, rows: list[RequestResult], names: tuple[SimName, ...], pricer: Pricer) -> None:
        self.rows = rows
        self.names = names
        self.pricer = pricer

    def cost_of(self, r: RequestResult, name: str | None) -> float | None:
        """What request `r` costs under simulator `name` (None: with no cache at all)."""
        if name is not None:
            return r.sims[name].cost
        output = r.reported.output if r.reported is not None else 0
        return self.pricer.cost(r.price, prompt=r.prompt_tokens, reusable=0, write=0, output=output)

    def sim(self, name: str) -> SimTotals:
        reasons: dict[str, ReasonTotals] = {}
        cost: float | None = None
        write_cost: float | None = None
        for r in self.rows:
            s = r.sims[name]
            seen = reasons.get(s.reason.label, ReasonTotals())
            reasons[s.reason.label] = ReasonTotals(
                seen.requests + 1, seen.lost + s.reason.lost, add_cost(seen.cost, s.lost_cost)
            )
            cost = add_cost(cost, s.cost)
            write_cost = add_cost(write_cost, s.write_cost)
        return SimTotals(
            requests=len(self.rows),
            prompt_tokens=sum(r.prompt_tokens for r in self.rows),
            reusable=sum(r.sims[name].reusable for r in self.rows),
            write=sum(r.sims[name].write for r in self.rows),
            cost=cost,
            reasons=dict(sorted(reasons.items(), key=lambda kv: (-kv[1].lost, kv[0]))),
            write_cost=write_cost,
        )

    def by_purpose(self) -> dict[str, PurposeTotals]:
        groups: dict[str, list[RequestResult]] = {}
        for r in self.rows:
            groups.setdefault(r.purpose, []).append(r)
        out: dict[str, PurposeTotals] = {}
        for purpose, group in groups.items():
            cost: dict[str, float | None] = {}
            for name in self.names:
                c: float | None = None
                for r in group:
                    c = add_cost(c, self.cost_of(r, name))
                cost[name] = c
            out[purpose] = PurposeTotals(
                requests=len(group),
                prompt_tokens=sum(r.prompt_tokens for r in group),
                reusable={name: sum(r.sims[name].reusable for r in group) for name in self.names},
                write={name: sum(r.sims[name].write for r in group) for name in self.names},
                cost=cost,
            )
        return out

    def reported(self) -> ReportedTotals | None:
        usages = [r.reported for r in self.rows if r.reported is not None]
        if not usages:
            return None
        return ReportedTotals(
            requests=len(usages),
            prompt_tokens=sum(u.prompt for u in usages),
            cache_read=sum(u.cache_read for u in usages),
            cache_write=sum(u.cache_write for u in usages),
        )

    def uncached(self) -> float | None:
        total: float | None = None
        for r in self.rows:
            total = add_cost(total, self.cost_of(r, None))
        return total
