"""Run the meter over a trace: render, simulate, attribute, total.

In-process use (an experiment runner holding `TraceRecord`s)::

    tokenizer = await load_tiktoken()
    report = await measure_async(records, CanonicalRenderer(tokenizer))
    report.hit_ratio("ideal"); report.totals["vllm"].reasons; report.requests[3].sims["openai"].reason.label

`measure` is synchronous CPU work; `measure_async` runs it in a worker thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

import anyio.to_thread

from harness.cachemeter._request import MeterRequest
from harness.cachemeter.attribution import attribute
from harness.cachemeter.render import Renderer
from harness.cachemeter.report._cost import Pricer, add_cost
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
from harness.cachemeter.report._stream import Prepared, Stream, normalized
from harness.cachemeter.sim import SIM_NAMES, SimName, SimSettings, SimStep, Simulator, make_simulator
from harness.config import PriceConfig
from harness.trace import TraceRecord

__all__ = ["billed_ttl", "measure", "measure_async"]


def billed_ttl(request_ttl: Literal["5m", "1h"] | None, settings: SimSettings) -> Literal["5m", "1h"] | None:
    """The TTL cache writes are billed at: the request's own, unless the settings impose one
    (a TTL over 5 minutes is billed as Anthropic's 1-hour writes, the cheapest that covers it)."""
    if settings.anthropic_ttl_s is None:
        return request_ttl
    return "1h" if settings.anthropic_ttl_s > 300 else "5m"


class _Meter:
    """The state of one pass over a trace: the simulators, and what earlier requests left."""

    def __init__(
        self, renderer: Renderer, names: tuple[SimName, ...], settings: SimSettings, pricer: Pricer
    ) -> None:
        self.stream = Stream(renderer)
        self.names = names
        self.settings = settings
        self.pricer = pricer
        self.sims: dict[str, Simulator] = {
            n: make_simulator(n, settings=settings) for n in names if n != "ideal"
        }

    def step(self, i: int, req: MeterRequest) -> RequestResult:
        """Render, simulate and attribute request number `i`."""
        p = self.stream.prepare(i, req)
        entry = self.pricer.pick(req.model)
        ttl = billed_ttl(req.cache_ttl, self.settings)
        results, warnings = self._simulate(p, entry, ttl)
        return RequestResult(
            index=i,
            line=req.line,
            session_id=req.session_id,
            turn=req.turn,
            purpose=req.purpose,
            model=req.model,
            timestamp=req.timestamp,
            prompt_tokens=p.rendered.n_tokens,
            reported=req.usage,
            price=entry,
            content=p.content,
            sims=results,
            warnings=tuple(warnings),
            ttl=ttl,
            gap=p.gap,
        )

    def _simulate(
        self, p: Prepared, entry: str | None, ttl: Literal["5m", "1h"] | None
    ) -> tuple[dict[str, SimResult], list[str]]:
        results: dict[str, SimResult] = {}
        warnings = list(p.rendered.warnings)
        n = p.rendered.n_tokens
        output = p.request.usage.output if p.request.usage is not None else 0
        for name in self.names:
            if name == "ideal":
                m = p.match
                step = SimStep(reusable=m.prefix, prefix=m.prefix, source=m.source, potential=m.prefix)
            else:
                step = self.sims[name].feed(p.sim)
            reason = attribute(p.content, step, n=n, shared=p.match.prefix)
            pay = self.pricer
            results[name] = SimResult(
                step.reusable,
                step.write,
                step.prefix,
                step.source,
                reason,
                step.warnings,
                cost=pay.cost(
                    entry, prompt=n, reusable=step.reusable, write=step.write, output=output, ttl=ttl
                ),
                lost_cost=pay.lost(
                    entry, prompt=n, reusable=step.reusable, write=step.write, lost=reason.lost, ttl=ttl
                ),
                write_cost=pay.write_cost(entry, write=step.write, ttl=ttl),
            )
            warnings.extend(w for w in step.warnings if w not in warnings)
        return results, warnings


def measure(
    requests: Iterable[MeterRequest | TraceRecord],
    renderer: Renderer,
    *,
    tokenizer: str = "",
    simulators: Sequence[SimName] = SIM_NAMES,
    settings: SimSettings | None = None,
    prices: Mapping[str, PriceConfig] | None = None,
    price: str | None = None,
    progress: Callable[[int], None] | None = None,
    notices: Sequence[str] = (),
) -> MeterReport:
    """Render every request, run the simulators in trace order, attribute each miss, total.

    Args:
        requests: trace records or already-normalized requests, in trace order.
        renderer: how requests become tokens (it carries the tokenizer).
        tokenizer: the tokenizer's name, for the report.
        simulators: which simulators to run, in report order.
        settings: simulator knobs (defaults: the documented provider/engine defaults).
        prices: the config's price table (None: no cost estimate).
        price: a price-table name to use for every request instead of matching model names.
        progress: called with the count of requests done after each one.
        notices: what reading the trace found (skipped lines, what its format lacks), shown
            first among the report's notices.

    Raises:
        MeterError: a price name is unknown, or the renderer refused a request.
    """
    cfg = settings or SimSettings()
    names = tuple(dict.fromkeys(simulators))
    pricer = Pricer(prices, price)
    meter = _Meter(renderer, names, cfg, pricer)
    rows: list[RequestResult] = []
    for i, req in enumerate(normalized(requests)):
        rows.append(meter.step(i, req))
        if progress is not None:
            progress(i + 1)
    totals = _Totals(rows, names, pricer)
    return MeterReport(
        renderer=renderer.name,
        tokenizer=tokenizer,
        simulators=names,
        settings=cfg,
        requests=tuple(rows),
        totals={name: totals.sim(name) for name in names},
        by_purpose=totals.by_purpose(),
        reported=totals.reported(),
        unpriced_requests=sum(1 for r in rows if r.price is None) if prices is not None else len(rows),
        uncached_cost=totals.uncached(),
        phases=phase_report(rows, names),
        notices=(*notices, *meter.stream.notices),
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


async def measure_async(
    requests: Iterable[MeterRequest | TraceRecord],
    renderer: Renderer,
    *,
    tokenizer: str = "",
    simulators: Sequence[SimName] = SIM_NAMES,
    settings: SimSettings | None = None,
    prices: Mapping[str, PriceConfig] | None = None,
    price: str | None = None,
) -> MeterReport:
    """`measure` in a worker thread, for callers on the event loop (experiment runners)."""
    work = functools.partial(
        measure,
        list(requests),
        renderer,
        tokenizer=tokenizer,
        simulators=simulators,
        settings=settings,
        prices=prices,
        price=price,
    )
    return await anyio.to_thread.run_sync(work)
