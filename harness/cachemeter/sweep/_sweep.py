"""The TTL sweep: hit ratio and cost against the cache timeout, and what idle gaps cost.

Every simulator with a clock runs once per timeout T, side by side in one pass over the trace:
`openai` with an idle TTL of T, `anthropic` with every entry's TTL set to T (Anthropic sells
5 minutes and 1 hour; other values are what-ifs, their writes billed at the 5-minute price up
to 5 minutes and at the 1-hour price above), and the local servers (`vllm`, `sglang`,
`llamacpp`, `llamacpp-ram`) dropping an entry unused for T. A first row runs the settings as
given (the providers' documented TTLs, each request's own Anthropic TTL): the trace as it was.

The idle view, per row: an *idle miss* is a request that lost tokens because the prefix it
shared had expired (`ttl_expired`: the gap since that prefix was last used exceeded the
timeout); its cost is what reading those tokens would have saved. A *keep-alive* would have
kept it warm: a one-token request re-reading the prefix before each expiry, ceil(gap / T) - 1
of them per idle gap, each billed as a cache read of the prefix plus one output token. The
keep-alive saves the idle cost and spends the pings; its net is the difference.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic import JsonValue

from harness.cachemeter._errors import MeterError
from harness.cachemeter.pricing import Pricer, RequestPrice, add_cost, billed_ttl
from harness.cachemeter.report import TokenRatios
from harness.cachemeter.sim import SimName, SimSettings, SimStep, Simulator, make_simulator
from harness.cachemeter.stream import Prepared
from harness.types import JsonObject

__all__ = ["DEFAULT_TTLS", "TIME_AWARE", "SweepPass", "TtlCell", "TtlSweep", "format_ttl", "parse_ttls"]

TIME_AWARE: tuple[SimName, ...] = ("vllm", "sglang", "llamacpp", "llamacpp-ram", "openai", "anthropic")
DEFAULT_TTLS: tuple[float, ...] = (30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_ttls(text: str) -> tuple[float, ...]:
    """`30s,1m,5m,1h` (or plain seconds) → seconds, ascending, without repeats.

    Raises:
        MeterError: an entry is not a positive duration.
    """
    out: set[float] = set()
    for raw in text.split(","):
        item = raw.strip().lower()
        if not item:
            continue
        found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smh]?)", item)
        seconds = float(found.group(1)) * _UNITS[found.group(2) or "s"] if found else 0.0
        if seconds <= 0:
            raise MeterError(f"--ttl-sweep: {raw.strip()!r} is not a positive duration; write e.g. 30s,5m,1h")
        out.add(seconds)
    if not out:
        raise MeterError("--ttl-sweep names no timeout; write e.g. 30s,5m,1h")
    return tuple(sorted(out))


def format_ttl(seconds: float) -> str:
    """3600 → `1 h`, 300 → `5 m`, 45 → `45 s`."""
    for unit, size in (("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


@dataclass(frozen=True, slots=True)
class TtlCell(TokenRatios):
    """One simulator at one timeout: totals, and the idle view (see the module docstring).

    `ttl_s` is None for the settings as given. Dollar figures are None when unpriced.
    """

    ttl_s: float | None
    requests: int
    prompt_tokens: int
    reusable: int
    write: int
    cost: float | None
    write_cost: float | None
    idle_requests: int
    idle_lost: int
    idle_cost: float | None
    keepalive_pings: int
    keepalive_cost: float | None

    @property
    def keepalive_net(self) -> float | None:
        """What keeping the cache warm would have saved (negative: cost) over these idle misses."""
        if self.idle_cost is None or self.keepalive_cost is None:
            return None
        return self.idle_cost - self.keepalive_cost

    def to_json(self) -> JsonObject:
        return {
            "ttl_s": self.ttl_s,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "reusable": self.reusable,
            "write": self.write,
            "hit_ratio": self.hit_ratio,
            "write_ratio": self.write_ratio,
            "cost": self.cost,
            "write_cost": self.write_cost,
            "idle": {
                "requests": self.idle_requests,
                "lost": self.idle_lost,
                "cost": self.idle_cost,
                "keepalive_pings": self.keepalive_pings,
                "keepalive_cost": self.keepalive_cost,
                "keepalive_net": self.keepalive_net,
            },
        }


@dataclass(frozen=True, slots=True)
class TtlSweep:
    """Every time-aware simulator at every timeout, and as the trace was."""

    ttls: tuple[float, ...]
    simulators: tuple[SimName, ...]
    as_given: dict[str, TtlCell]
    rows: dict[str, tuple[TtlCell, ...]]
    """Per simulator, one cell per entry of `ttls`."""

    def to_json(self) -> JsonObject:
        rows: dict[str, JsonValue] = {name: [c.to_json() for c in cells] for name, cells in self.rows.items()}
        as_given: dict[str, JsonValue] = {name: c.to_json() for name, c in self.as_given.items()}
        return {
            "ttls": list(self.ttls),
            "simulators": list(self.simulators),
            "as_given": as_given,
            "rows": rows,
        }


def _timeout(name: SimName, settings: SimSettings, request_ttl: str | None) -> float | None:
    """The timeout simulator `name` runs with under `settings` for a request."""
    if name == "openai":
        return settings.openai_ttl_s
    if name == "anthropic":
        if settings.anthropic_ttl_s is not None:
            return settings.anthropic_ttl_s
        return 3600.0 if request_ttl == "1h" else 300.0
    return settings.server_idle_s


class _Cell:
    """Running sums for one `TtlCell`."""

    def __init__(self, ttl_s: float | None) -> None:
        self.ttl_s = ttl_s
        self.requests = self.prompt = self.reusable = self.write = 0
        self.idle_requests = self.idle_lost = self.pings = 0
        self.cost: float | None = None
        self.write_cost: float | None = None
        self.idle_cost: float | None = None
        self.ping_cost: float | None = None

    def add(self, p: Prepared, step: SimStep, price: RequestPrice, timeout: float | None) -> None:
        self.requests += 1
        self.prompt += price.prompt
        self.reusable += step.reusable
        self.write += step.write
        self.cost = add_cost(self.cost, price.cost(reusable=step.reusable, write=step.write))
        self.write_cost = add_cost(self.write_cost, price.write_cost(write=step.write))
        lost = step.potential - step.reusable
        if step.loss != "ttl_expired" or lost <= 0:
            return
        self.idle_requests += 1
        self.idle_lost += lost
        self.idle_cost = add_cost(
            self.idle_cost, price.lost(reusable=step.reusable, write=step.write, lost=lost)
        )
        if timeout is None or p.gap is None:
            return
        pings = max(0, math.ceil(p.gap / timeout) - 1)
        self.pings += pings
        pricer, entry = price.pricer, price.entry
        one = pricer.cost(
            entry, prompt=step.potential, reusable=step.potential, write=0, output=1, ttl=price.ttl
        )
        self.ping_cost = add_cost(self.ping_cost, None if one is None else pings * one)

    def freeze(self) -> TtlCell:
        return TtlCell(
            ttl_s=self.ttl_s,
            requests=self.requests,
            prompt_tokens=self.prompt,
            reusable=self.reusable,
            write=self.write,
            cost=self.cost,
            write_cost=self.write_cost,
            idle_requests=self.idle_requests,
            idle_lost=self.idle_lost,
            idle_cost=self.idle_cost if self.idle_requests else (0.0 if self.cost is not None else None),
            keepalive_pings=self.pings,
            keepalive_cost=self.ping_cost if self.pings else (0.0 if self.cost is not None else None),
        )


def with_timeout(settings: SimSettings, ttl_s: float) -> SimSettings:
    """Every clocked simulator at one timeout."""
    return replace(settings, openai_ttl_s=ttl_s, anthropic_ttl_s=ttl_s, server_idle_s=ttl_s)


class SweepPass:
    """The TTL sweep's pass over the meter's stream: every time-aware simulator at every timeout
    (and as given), side by side (see the module docstring).

    Raises:
        MeterError: no simulator with a clock was named, or a timeout is not positive.
    """

    def __init__(
        self, ttls: Sequence[float], simulators: Sequence[SimName], settings: SimSettings, pricer: Pricer
    ) -> None:
        names = tuple(n for n in dict.fromkeys(simulators) if n in TIME_AWARE)
        if not names:
            raise MeterError(f"the TTL sweep needs a simulator with a clock: one of {', '.join(TIME_AWARE)}")
        points = tuple(sorted(set(ttls)))
        if not points or min(points) <= 0:
            raise MeterError(f"TTL sweep timeouts must be positive seconds, got {list(ttls)!r}")
        self.names = names
        self.points = points
        self.pricer = pricer
        self.variants = [(None, settings), *((t, with_timeout(settings, t)) for t in points)]
        self.sims: list[dict[str, Simulator]] = [
            {n: make_simulator(n, settings=s) for n in names} for _, s in self.variants
        ]
        self.cells = [{n: _Cell(t) for n in names} for t, _ in self.variants]

    def feed(self, p: Prepared) -> None:
        req = p.request
        output = req.usage.output if req.usage is not None else 0
        for k, (_, s) in enumerate(self.variants):
            price = self.pricer.request(
                req.model, prompt=p.rendered.n_tokens, output=output, ttl=billed_ttl(req.cache_ttl, s)
            )
            for name in self.names:
                step = self.sims[k][name].feed(p.sim)
                self.cells[k][name].add(p, step, price, _timeout(name, s, req.cache_ttl))

    def finish(self) -> TtlSweep:
        names, cells = self.names, self.cells
        return TtlSweep(
            ttls=self.points,
            simulators=names,
            as_given={n: cells[0][n].freeze() for n in names},
            rows={n: tuple(cells[k][n].freeze() for k in range(1, len(self.variants))) for n in names},
        )
