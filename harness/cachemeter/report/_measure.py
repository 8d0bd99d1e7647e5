"""Run the meter over a trace: render, simulate, attribute, total.

In-process use (an experiment runner holding `TraceRecord`s)::

    tokenizer = await load_tiktoken()
    report = await measure_async(records, CanonicalRenderer(tokenizer))
    report.hit_ratio("ideal"); report.totals["vllm"].reasons; report.requests[3].sims["openai"].reason.label

`measure` is synchronous CPU work; `measure_async` runs it in a worker thread.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence

import anyio.to_thread

from harness.cachemeter._request import MeterRequest
from harness.cachemeter.attribution import Attribution, attribute, content_break
from harness.cachemeter.render import Rendered, Renderer
from harness.cachemeter.report._cost import pick_price, request_cost
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
from harness.cachemeter.sim import (
    SIM_NAMES,
    IdealSimulator,
    PrefixMatch,
    SimName,
    SimRequest,
    SimSettings,
    SimStep,
    Simulator,
    make_simulator,
)
from harness.cachemeter.traces import request_from_record
from harness.config import PriceConfig
from harness.trace import TraceRecord

__all__ = ["measure", "measure_async"]


def _add(a: float | None, b: float | None) -> float | None:
    if b is None:
        return a
    return b if a is None else a + b


class _Meter:
    """The state of one pass over a trace: the simulators, and what earlier requests left."""

    def __init__(
        self,
        renderer: Renderer,
        names: tuple[SimName, ...],
        settings: SimSettings,
        prices: Mapping[str, PriceConfig] | None,
        price: str | None,
    ) -> None:
        self.renderer = renderer
        self.names = names
        self.prices = prices
        self.price = price
        self.ideal = IdealSimulator()
        self.sims: dict[str, Simulator] = {
            n: make_simulator(n, settings=settings) for n in names if n != "ideal"
        }
        self.generation_starts: list[int] = []
        self.notices: dict[str, None] = {}  # ordered set

    def step(self, i: int, req: MeterRequest) -> RequestResult:
        """Render, simulate and attribute request number `i`."""
        rendered = self.renderer.render(req)
        self.notices.update(dict.fromkeys(rendered.notices))
        sreq = SimRequest(
            tokens=rendered.tokens,
            model=req.model,
            timestamp=req.timestamp,
            breakpoints=rendered.breakpoints,
            boundaries=rendered.boundaries,
            ttl=req.cache_ttl,
        )
        match = self.ideal.match(sreq)
        sreq = dataclasses.replace(sreq, known_prefix=match.prefix)
        source_gen = self.generation_starts[match.source] if match.source is not None else None
        content = content_break(
            match, rendered, first=i == 0, source_generation_start=source_gen, message_base=req.message_base
        )
        self.generation_starts.append(rendered.generation_start)
        results, warnings = self._simulate(sreq, match, content, rendered)
        picked = pick_price(req.model, self.prices, override=self.price) if self.prices is not None else None
        return RequestResult(
            index=i,
            line=req.line,
            session_id=req.session_id,
            turn=req.turn,
            purpose=req.purpose,
            model=req.model,
            timestamp=req.timestamp,
            prompt_tokens=rendered.n_tokens,
            reported=req.usage,
            price=None if picked is None else picked[0],
            content=content,
            sims=results,
            warnings=tuple(warnings),
        )

    def _simulate(
        self, sreq: SimRequest, match: PrefixMatch, content: Attribution, rendered: Rendered
    ) -> tuple[dict[str, SimResult], list[str]]:
        results: dict[str, SimResult] = {}
        warnings = list(rendered.warnings)
        for name in self.names:
            if name == "ideal":
                step = SimStep(
                    reusable=match.prefix, prefix=match.prefix, source=match.source, potential=match.prefix
                )
            else:
                step = self.sims[name].feed(sreq)
            reason = attribute(content, step, n=rendered.n_tokens, shared=match.prefix)
            results[name] = SimResult(
                step.reusable, step.write, step.prefix, step.source, reason, step.warnings
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

    Raises:
        MeterError: a price name is unknown, or the renderer refused a request.
    """
    cfg = settings or SimSettings()
    names = tuple(dict.fromkeys(simulators))
    meter = _Meter(renderer, names, cfg, prices, price)
    rows: list[RequestResult] = []
    for i, item in enumerate(requests):
        req = item if isinstance(item, MeterRequest) else request_from_record(item, line=i + 1)
        rows.append(meter.step(i, req))
        if progress is not None:
            progress(i + 1)
    totals = _Totals(rows, names, prices)
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
        notices=tuple(meter.notices),
    )


class _Totals:
    """Sums over the requests of a trace: per simulator, per purpose, reported, cost."""

    def __init__(
        self, rows: list[RequestResult], names: tuple[SimName, ...], prices: Mapping[str, PriceConfig] | None
    ) -> None:
        self.rows = rows
        self.names = names
        self.prices = prices

    def cost_of(self, r: RequestResult, name: str | None) -> float | None:
        """What request `r` costs under simulator `name` (None: with no cache at all)."""
        if self.prices is None or r.price is None:
            return None
        output = r.reported.output if r.reported is not None else 0
        s = r.sims[name] if name is not None else None
        return request_cost(
            self.prices[r.price],
            prompt=r.prompt_tokens,
            reusable=0 if s is None else s.reusable,
            write=0 if s is None else s.write,
            output=output,
        )

    def sim(self, name: str) -> SimTotals:
        reasons: dict[str, ReasonTotals] = {}
        cost: float | None = None
        for r in self.rows:
            label = r.sims[name].reason.label
            seen = reasons.get(label, ReasonTotals())
            reasons[label] = ReasonTotals(seen.requests + 1, seen.lost + r.sims[name].reason.lost)
            cost = _add(cost, self.cost_of(r, name))
        return SimTotals(
            requests=len(self.rows),
            prompt_tokens=sum(r.prompt_tokens for r in self.rows),
            reusable=sum(r.sims[name].reusable for r in self.rows),
            write=sum(r.sims[name].write for r in self.rows),
            cost=cost,
            reasons=dict(sorted(reasons.items(), key=lambda kv: (-kv[1].lost, kv[0]))),
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
                    c = _add(c, self.cost_of(r, name))
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
            total = _add(total, self.cost_of(r, None))
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
