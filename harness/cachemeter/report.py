"""Run the meter over a trace: render, simulate, attribute, total — and the JSON report.

In-process use (an experiment runner holding `TraceRecord`s)::

    tokenizer = await load_tiktoken()
    report = await measure_async(records, CanonicalRenderer(tokenizer))
    report.hit_ratio("ideal"); report.totals["vllm"].reasons; report.requests[3].sims["openai"].reason.label

`measure` is synchronous CPU work; `measure_async` runs it in a worker thread.

JSON schema `keel.cache-report/1` (`MeterReport.to_json()`; keys are stable, new keys may be
added; token counts are ints, ratios floats in [0, 1], costs USD floats or null)::

    {"schema": "keel.cache-report/1",
     "renderer": "canonical", "tokenizer": "cl100k", "simulators": ["ideal", ...],
     "settings": {"block_size": 16, "vllm_budget_blocks": null, ...},
     "requests": [{
        "index": 0, "line": 1, "session_id": "s1" | null, "turn": 0 | null, "purpose": "turn",
        "model": "...", "timestamp": 1700000000.0 | null, "prompt_tokens": 5120,
        "reported": {"input": 0, "cache_read": 0, "cache_write": 0, "output": 0} | null,
        "price": "gpt-4o" | null,
        "content": {"reason": "system_changed:memory", "lost": 3100, "position": 2020 | null},
        "sims": {"vllm": {"reusable": 2016, "write": 0, "prefix": 2016, "source": 0 | null,
                          "reason": "system_changed:memory", "lost": 3100, "warnings": []}, ...},
        "warnings": ["..."]}, ...],
     "totals": {"vllm": {"requests": 10, "prompt_tokens": 51200, "reusable": 40000, "write": 0,
                         "hit_ratio": 0.78, "cost": 0.05 | null,
                         "reasons": {"none": {"requests": 8, "lost": 0}, ...}}, ...},
     "by_purpose": {"turn": {"requests": 9, "prompt_tokens": 48000,
                             "sims": {"vllm": {"reusable": 1, "write": 0, "hit_ratio": 0.8,
                                               "cost": 0.04 | null}, ...}}, ...},
     "reported": {"requests": 10, "prompt_tokens": 51000, "cache_read": 39000,
                  "cache_write": 0, "hit_ratio": 0.76} | null,
     "cost": {"unpriced_requests": 0, "uncached": 0.13 | null},
     "phases": {"steady": {"requests": 7, "prompt_tokens": 40000,
                           "sims": {"vllm": {"reusable": 39000, "hit_ratio": 0.97}, ...}},
                "cold": ..., "flush": ..., "summary": ..., "rewarm": ..., "other": ...},
     "compressions": [{"index": 0, "requests": [8, 9], "flush": 1, "summary": 1,
                       "sims": {"vllm": {"rewarm": 1 | null, "rewarm_lost": 2900, "breaks": 2}, ...}}],
     "notices": ["..."]}

`phases` and `compressions` are defined in `harness.cachemeter._phases`; `notices` are facts
about how the renderer treated the trace (e.g. tools a chat template drops), each once.

`reason` labels: none, first_request, model_changed, tools_changed, system_changed[:<slot>],
messages_changed:<index>, ttl_expired, evicted, below_minimum, block_rounding, no_breakpoint
(see `harness.cachemeter.attribution`). `hit_ratio` is token-weighted: reusable / prompt.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import anyio.to_thread
from pydantic import JsonValue

from harness.cachemeter._cost import pick_price, request_cost
from harness.cachemeter._ideal import PrefixMatch
from harness.cachemeter._input import request_from_record
from harness.cachemeter._phases import PhaseReport, phase_report
from harness.cachemeter._request import MeterRequest
from harness.cachemeter._results import (
    PurposeTotals,
    ReasonTotals,
    ReportedTotals,
    RequestResult,
    SimResult,
    SimTotals,
)
from harness.cachemeter._simtypes import SimName, SimRequest, SimStep, Simulator
from harness.cachemeter.attribution import Attribution, attribute, content_break
from harness.cachemeter.render import Rendered, Renderer
from harness.cachemeter.sim import SIM_NAMES, IdealSimulator, SimSettings, make_simulator
from harness.config import PriceConfig
from harness.trace import TraceRecord
from harness.types import JsonObject

__all__ = [
    "SCHEMA",
    "MeterReport",
    "PurposeTotals",
    "ReasonTotals",
    "ReportedTotals",
    "RequestResult",
    "SimResult",
    "SimTotals",
    "measure",
    "measure_async",
]

SCHEMA = "keel.cache-report/1"


@dataclass(frozen=True, slots=True)
class MeterReport:
    """Everything the meter found about one trace."""

    renderer: str
    tokenizer: str
    simulators: tuple[SimName, ...]
    settings: SimSettings
    requests: tuple[RequestResult, ...]
    totals: dict[str, SimTotals]
    by_purpose: dict[str, PurposeTotals]
    reported: ReportedTotals | None
    unpriced_requests: int
    uncached_cost: float | None
    phases: PhaseReport
    notices: tuple[str, ...] = ()

    def hit_ratio(self, sim: SimName) -> float:
        """Token-weighted hit ratio of one simulator over the trace."""
        return self.totals[sim].hit_ratio

    def to_json(self) -> JsonObject:
        """The report in the stable `keel.cache-report/1` schema (see the module docstring)."""
        return {
            "schema": SCHEMA,
            "renderer": self.renderer,
            "tokenizer": self.tokenizer,
            "simulators": list(self.simulators),
            "settings": dict(dataclasses.asdict(self.settings)),
            "requests": [_request_json(r) for r in self.requests],
            "totals": {name: _totals_json(t) for name, t in self.totals.items()},
            "by_purpose": {
                purpose: {
                    "requests": p.requests,
                    "prompt_tokens": p.prompt_tokens,
                    "sims": {
                        name: {
                            "reusable": p.reusable[name],
                            "write": p.write[name],
                            "hit_ratio": p.hit_ratio(name),
                            "cost": p.cost[name],
                        }
                        for name in self.simulators
                    },
                }
                for purpose, p in self.by_purpose.items()
            },
            "reported": None
            if self.reported is None
            else {
                "requests": self.reported.requests,
                "prompt_tokens": self.reported.prompt_tokens,
                "cache_read": self.reported.cache_read,
                "cache_write": self.reported.cache_write,
                "hit_ratio": self.reported.hit_ratio,
            },
            "cost": {"unpriced_requests": self.unpriced_requests, "uncached": self.uncached_cost},
            **self.phases.to_json(),
            "notices": list(self.notices),
        }


def _request_json(r: RequestResult) -> JsonObject:
    sims: dict[str, JsonValue] = {
        name: {
            "reusable": s.reusable,
            "write": s.write,
            "prefix": s.prefix,
            "source": s.source,
            "reason": s.reason.label,
            "lost": s.reason.lost,
            "warnings": list(s.warnings),
        }
        for name, s in r.sims.items()
    }
    u = r.reported
    return {
        "index": r.index,
        "line": r.line,
        "session_id": r.session_id,
        "turn": r.turn,
        "purpose": r.purpose,
        "model": r.model,
        "timestamp": r.timestamp,
        "prompt_tokens": r.prompt_tokens,
        "reported": None
        if u is None
        else {"input": u.input, "cache_read": u.cache_read, "cache_write": u.cache_write, "output": u.output},
        "price": r.price,
        "content": {"reason": r.content.label, "lost": r.content.lost, "position": r.content.position},
        "sims": sims,
        "warnings": list(r.warnings),
    }


def _totals_json(t: SimTotals) -> JsonObject:
    return {
        "requests": t.requests,
        "prompt_tokens": t.prompt_tokens,
        "reusable": t.reusable,
        "write": t.write,
        "hit_ratio": t.hit_ratio,
        "cost": t.cost,
        "reasons": {label: {"requests": r.requests, "lost": r.lost} for label, r in t.reasons.items()},
    }


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
