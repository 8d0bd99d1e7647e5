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
     "cost": {"unpriced_requests": 0, "uncached": 0.13 | null}}

`reason` labels: none, first_request, model_changed, tools_changed, system_changed[:<slot>],
messages_changed:<index>, ttl_expired, evicted, below_minimum, block_rounding, no_breakpoint
(see `harness.cachemeter.attribution`). `hit_ratio` is token-weighted: reusable / prompt.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import anyio.to_thread
from pydantic import JsonValue

from harness.cachemeter._cost import pick_price, request_cost
from harness.cachemeter._input import request_from_record
from harness.cachemeter._request import MeterRequest, ReportedUsage
from harness.cachemeter._simtypes import SimName, SimRequest, SimStep, Simulator
from harness.cachemeter.attribution import Attribution, attribute, content_break
from harness.cachemeter.render import Renderer
from harness.cachemeter.sim import SIM_NAMES, IdealSimulator, SimSettings, make_simulator
from harness.config import PriceConfig
from harness.trace import TraceRecord
from harness.types import JsonObject, Purpose

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
class SimResult:
    """One simulator's outcome on one request."""

    reusable: int
    write: int
    prefix: int
    source: int | None
    reason: Attribution
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestResult:
    """One request: what it was, what each simulator reused, and why not more."""

    index: int
    line: int
    session_id: str | None
    turn: int | None
    purpose: Purpose
    model: str
    timestamp: float | None
    prompt_tokens: int
    reported: ReportedUsage | None
    price: str | None
    content: Attribution
    sims: dict[str, SimResult]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReasonTotals:
    requests: int = 0
    lost: int = 0


@dataclass(frozen=True, slots=True)
class SimTotals:
    """One simulator over the whole trace."""

    requests: int
    prompt_tokens: int
    reusable: int
    write: int
    cost: float | None
    reasons: dict[str, ReasonTotals] = field(default_factory=dict)

    @property
    def hit_ratio(self) -> float:
        """Token-weighted: reusable / prompt tokens."""
        return self.reusable / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass(frozen=True, slots=True)
class PurposeTotals:
    """All requests of one purpose (turn / flush / summary / search)."""

    requests: int
    prompt_tokens: int
    reusable: dict[str, int]
    write: dict[str, int]
    cost: dict[str, float | None]

    def hit_ratio(self, sim: str) -> float:
        return self.reusable[sim] / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass(frozen=True, slots=True)
class ReportedTotals:
    """What providers reported, over the requests whose usage the trace recorded."""

    requests: int
    prompt_tokens: int
    cache_read: int
    cache_write: int

    @property
    def hit_ratio(self) -> float:
        return self.cache_read / self.prompt_tokens if self.prompt_tokens else 0.0


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
    ideal = IdealSimulator()
    sims: dict[str, Simulator] = {n: make_simulator(n, settings=cfg) for n in names if n != "ideal"}
    generation_starts: list[int] = []
    rows: list[RequestResult] = []
    for i, item in enumerate(requests):
        req = item if isinstance(item, MeterRequest) else request_from_record(item, line=i + 1)
        rendered = renderer.render(req)
        n = rendered.n_tokens
        sreq = SimRequest(
            tokens=rendered.tokens,
            model=req.model,
            timestamp=req.timestamp,
            breakpoints=rendered.breakpoints,
            boundaries=rendered.boundaries,
            ttl=req.cache_ttl,
        )
        match = ideal.match(sreq)
        sreq = dataclasses.replace(sreq, known_prefix=match.prefix)
        source_gen = generation_starts[match.source] if match.source is not None else None
        content = content_break(
            match, rendered, first=i == 0, source_generation_start=source_gen, message_base=req.message_base
        )
        generation_starts.append(rendered.generation_start)
        results: dict[str, SimResult] = {}
        warnings = list(rendered.warnings)
        for name in names:
            if name == "ideal":
                step = SimStep(
                    reusable=match.prefix, prefix=match.prefix, source=match.source, potential=match.prefix
                )
            else:
                step = sims[name].feed(sreq)
            reason = attribute(content, step, n=n, shared=match.prefix)
            results[name] = SimResult(
                step.reusable, step.write, step.prefix, step.source, reason, step.warnings
            )
            warnings.extend(w for w in step.warnings if w not in warnings)
        picked = pick_price(req.model, prices, override=price) if prices is not None else None
        rows.append(
            RequestResult(
                index=i,
                line=req.line,
                session_id=req.session_id,
                turn=req.turn,
                purpose=req.purpose,
                model=req.model,
                timestamp=req.timestamp,
                prompt_tokens=n,
                reported=req.usage,
                price=None if picked is None else picked[0],
                content=content,
                sims=results,
                warnings=tuple(warnings),
            )
        )
        if progress is not None:
            progress(i + 1)
    return _summarize(rows, renderer.name, tokenizer, names, cfg, prices)


def _summarize(
    rows: list[RequestResult],
    renderer: str,
    tokenizer: str,
    names: tuple[SimName, ...],
    settings: SimSettings,
    prices: Mapping[str, PriceConfig] | None,
) -> MeterReport:
    totals: dict[str, SimTotals] = {}
    purposes: dict[str, list[RequestResult]] = {}
    for r in rows:
        purposes.setdefault(r.purpose, []).append(r)

    def cost_of(r: RequestResult, name: str) -> float | None:
        if prices is None or r.price is None:
            return None
        s = r.sims[name]
        output = r.reported.output if r.reported is not None else 0
        return request_cost(
            prices[r.price], prompt=r.prompt_tokens, reusable=s.reusable, write=s.write, output=output
        )

    for name in names:
        reasons: dict[str, ReasonTotals] = {}
        cost: float | None = None
        for r in rows:
            label = r.sims[name].reason.label
            seen = reasons.get(label, ReasonTotals())
            reasons[label] = ReasonTotals(seen.requests + 1, seen.lost + r.sims[name].reason.lost)
            cost = _add(cost, cost_of(r, name))
        totals[name] = SimTotals(
            requests=len(rows),
            prompt_tokens=sum(r.prompt_tokens for r in rows),
            reusable=sum(r.sims[name].reusable for r in rows),
            write=sum(r.sims[name].write for r in rows),
            cost=cost,
            reasons=dict(sorted(reasons.items(), key=lambda kv: (-kv[1].lost, kv[0]))),
        )
    by_purpose: dict[str, PurposeTotals] = {}
    for purpose, group in purposes.items():
        purpose_cost: dict[str, float | None] = {}
        for name in names:
            c: float | None = None
            for r in group:
                c = _add(c, cost_of(r, name))
            purpose_cost[name] = c
        by_purpose[purpose] = PurposeTotals(
            requests=len(group),
            prompt_tokens=sum(r.prompt_tokens for r in group),
            reusable={name: sum(r.sims[name].reusable for r in group) for name in names},
            write={name: sum(r.sims[name].write for r in group) for name in names},
            cost=purpose_cost,
        )
    reported_rows = [r.reported for r in rows if r.reported is not None]
    reported = (
        ReportedTotals(
            requests=len(reported_rows),
            prompt_tokens=sum(u.prompt for u in reported_rows),
            cache_read=sum(u.cache_read for u in reported_rows),
            cache_write=sum(u.cache_write for u in reported_rows),
        )
        if reported_rows
        else None
    )
    uncached: float | None = None
    for r in rows:
        if prices is not None and r.price is not None:
            output = r.reported.output if r.reported is not None else 0
            uncached = _add(
                uncached,
                request_cost(prices[r.price], prompt=r.prompt_tokens, reusable=0, write=0, output=output),
            )
    return MeterReport(
        renderer=renderer,
        tokenizer=tokenizer,
        simulators=names,
        settings=settings,
        requests=tuple(rows),
        totals=totals,
        by_purpose=by_purpose,
        reported=reported,
        unpriced_requests=sum(1 for r in rows if r.price is None) if prices is not None else len(rows),
        uncached_cost=uncached,
    )


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
