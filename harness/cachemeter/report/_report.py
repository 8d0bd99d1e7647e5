"""The meter's report of one trace, and its JSON schema.

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

`phases` and `compressions` are defined in `harness.cachemeter.report._phases`; `notices` are facts
about how the renderer treated the trace (e.g. tools a chat template drops), each once.

`reason` labels: none, first_request, model_changed, tools_changed, system_changed[:<slot>],
messages_changed:<index>, ttl_expired, evicted, below_minimum, block_rounding, no_breakpoint
(see `harness.cachemeter.attribution`). `hit_ratio` is token-weighted: reusable / prompt.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pydantic import JsonValue

from harness.cachemeter.report._phases import PhaseReport
from harness.cachemeter.report._results import PurposeTotals, ReportedTotals, RequestResult, SimTotals
from harness.cachemeter.sim import SimName, SimSettings
from harness.types import JsonObject

__all__ = ["SCHEMA", "MeterReport"]

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
