"""Replica runs: every routing policy at every fleet size, side by side in one pass over the trace.

A trace of many sessions interleaved by time (one trace, or several merged with
`harness.cachemeter.traces.interleave`) is fed to one `FleetSimulator` per (policy, servers,
simulator). For each: hit ratio, cost, the requests and tokens lost to `routed_away` (and what
they cost), and how often a request that some server held a prefix of landed on the server
holding the longest. Each request's server and miss reason are kept too (`RequestRoute`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from harness.cachemeter._errors import MeterError
from harness.cachemeter._request import MeterRequest
from harness.cachemeter.attribution import attribute
from harness.cachemeter.render import Renderer
from harness.cachemeter.replicas._fleet import FLEET_SIMS, FleetSimulator
from harness.cachemeter.replicas._router import ROUTING_POLICIES, RoutingPolicy
from harness.cachemeter.report._cost import Pricer, add_cost
from harness.cachemeter.report._measure import billed_ttl
from harness.cachemeter.report._stream import Prepared, Stream, normalized
from harness.cachemeter.sim import SimName, SimSettings
from harness.config import PriceConfig
from harness.trace import TraceRecord
from harness.types import JsonObject

__all__ = ["FleetCell", "ReplicaReport", "RequestRoute", "replica_sweep"]


@dataclass(frozen=True, slots=True)
class RequestRoute:
    """Where one request landed and what it found there."""

    server: int
    reusable: int
    reason: str
    lost: int


@dataclass(frozen=True, slots=True)
class FleetCell:
    """One simulator on `replicas` servers under one policy, over the whole trace."""

    policy: RoutingPolicy
    replicas: int
    sim: SimName
    prompt_tokens: int
    reusable: int
    cost: float | None
    routed_requests: int
    routed_lost: int
    routed_cost: float | None
    warm_possible: int
    warm_landed: int
    routes: tuple[RequestRoute, ...]

    @property
    def hit_ratio(self) -> float:
        return self.reusable / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def warm_ratio(self) -> float:
        """Of the requests some server held a prefix of, the share sent to the one holding most."""
        return self.warm_landed / self.warm_possible if self.warm_possible else 1.0

    def to_json(self) -> JsonObject:
        routes: list[JsonValue] = [
            {"server": r.server, "reusable": r.reusable, "reason": r.reason, "lost": r.lost}
            for r in self.routes
        ]
        return {
            "policy": self.policy,
            "replicas": self.replicas,
            "sim": self.sim,
            "prompt_tokens": self.prompt_tokens,
            "reusable": self.reusable,
            "hit_ratio": self.hit_ratio,
            "cost": self.cost,
            "routed_away": {
                "requests": self.routed_requests,
                "lost": self.routed_lost,
                "cost": self.routed_cost,
            },
            "warm": {"possible": self.warm_possible, "landed": self.warm_landed, "ratio": self.warm_ratio},
            "requests": routes,
        }


@dataclass(frozen=True, slots=True)
class ReplicaReport:
    """Every (policy, fleet size, simulator) over one trace."""

    policies: tuple[RoutingPolicy, ...]
    counts: tuple[int, ...]
    simulators: tuple[SimName, ...]
    cells: tuple[FleetCell, ...]

    def cell(self, policy: RoutingPolicy, replicas: int, sim: SimName) -> FleetCell:
        return next(c for c in self.cells if (c.policy, c.replicas, c.sim) == (policy, replicas, sim))

    def to_json(self) -> JsonObject:
        cells: list[JsonValue] = [c.to_json() for c in self.cells]
        return {
            "policies": list(self.policies),
            "replicas": list(self.counts),
            "simulators": list(self.simulators),
            "runs": cells,
        }


class _Run:
    def __init__(self, fleet: FleetSimulator) -> None:
        self.fleet = fleet
        self.prompt = self.reusable = self.routed = self.routed_lost = 0
        self.cost: float | None = None
        self.routed_cost: float | None = None
        self.routes: list[RequestRoute] = []

    def feed(
        self, p: Prepared, pricer: Pricer, entry: str | None, ttl: Literal["5m", "1h"] | None, output: int
    ) -> None:
        """Send one request to the fleet and add up what it found."""
        n = p.rendered.n_tokens
        step = self.fleet.feed(p.sim)
        reason = attribute(p.content, step, n=n, shared=p.match.prefix)
        assert self.fleet.server is not None
        self.routes.append(RequestRoute(self.fleet.server, step.reusable, reason.label, reason.lost))
        self.prompt += n
        self.reusable += step.reusable
        self.cost = add_cost(
            self.cost,
            pricer.cost(entry, prompt=n, reusable=step.reusable, write=step.write, output=output, ttl=ttl),
        )
        if reason.kind == "routed_away":
            self.routed += 1
            self.routed_lost += reason.lost
            lost = pricer.lost(
                entry, prompt=n, reusable=step.reusable, write=step.write, lost=reason.lost, ttl=ttl
            )
            self.routed_cost = add_cost(self.routed_cost, lost)


def replica_sweep(
    requests: Iterable[MeterRequest | TraceRecord],
    renderer: Renderer,
    *,
    counts: Sequence[int] = (1, 2, 4, 8),
    policies: Sequence[RoutingPolicy] = ROUTING_POLICIES,
    simulators: Sequence[SimName] = ("sglang",),
    settings: SimSettings | None = None,
    prices: Mapping[str, PriceConfig] | None = None,
    price: str | None = None,
    threshold: float = 0.5,
    progress: Callable[[int], None] | None = None,
) -> ReplicaReport:
    """Feed the trace to a fleet per (policy, count, simulator) (see the module docstring).

    Raises:
        MeterError: a count below 1, a simulator that does not run on servers, or an unknown
            price name.
    """
    sizes = tuple(sorted(set(counts)))
    if not sizes or sizes[0] < 1:
        raise MeterError(f"--replicas takes server counts of at least 1, got {list(counts)!r}")
    names = tuple(dict.fromkeys(simulators))
    bad = [n for n in names if n not in FLEET_SIMS]
    if bad or not names:
        raise MeterError(
            f"replicas run server simulators ({', '.join(FLEET_SIMS)}); {', '.join(bad) or 'none'} cannot be"
        )
    cfg = settings or SimSettings()
    pols = tuple(dict.fromkeys(policies))
    runs = {
        (pol, size, name): _Run(FleetSimulator(name, size, pol, settings=cfg, threshold=threshold))
        for pol in pols
        for size in sizes
        for name in names
    }
    pricer = Pricer(prices, price)
    stream = Stream(renderer)
    for i, req in enumerate(normalized(requests)):
        p = stream.prepare(i, req)
        entry = pricer.pick(req.model)
        ttl = billed_ttl(req.cache_ttl, cfg)
        output = req.usage.output if req.usage is not None else 0
        for run in runs.values():
            run.feed(p, pricer, entry, ttl, output)
        if progress is not None:
            progress(i + 1)
    cells = tuple(
        FleetCell(
            policy=pol,
            replicas=size,
            sim=name,
            prompt_tokens=run.prompt,
            reusable=run.reusable,
            cost=run.cost,
            routed_requests=run.routed,
            routed_lost=run.routed_lost,
            routed_cost=run.routed_cost,
            warm_possible=run.fleet.warm_possible,
            warm_landed=run.fleet.warm_landed,
            routes=tuple(run.routes),
        )
        for (pol, size, name), run in runs.items()
    )
    return ReplicaReport(pols, sizes, names, cells)
