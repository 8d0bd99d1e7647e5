"""Replica runs: every routing policy at every fleet size, side by side in one pass over the trace.

A trace of many sessions interleaved by time (one trace, or several merged with
`harness.cachemeter.traces.interleave`) is fed to one `FleetSimulator` per (policy, servers,
simulator). For each: hit ratio, cost, the requests and tokens lost to `routed_away` (and what
they cost), and how often a request that some server held a prefix of landed on the server
holding the longest. Each request's server and miss reason are kept too (`RequestRoute`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from harness.cachemeter._errors import MeterError
from harness.cachemeter._share import share
from harness.cachemeter.attribution import attribute
from harness.cachemeter.pricing import Pricer, RequestPrice, add_cost, billed_ttl
from harness.cachemeter.replicas._fleet import FLEET_SIMS, FleetSimulator
from harness.cachemeter.replicas._router import ROUTING_POLICIES, RoutingPolicy
from harness.cachemeter.sim import SimName, SimSettings
from harness.cachemeter.stream import Prepared
from harness.types import JsonObject

__all__ = ["FleetCell", "ReplicaPass", "ReplicaReport", "RequestRoute"]


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
        return share(self.reusable, self.prompt_tokens)

    @property
    def warm_ratio(self) -> float:
        """Of the requests some server held a prefix of, the share sent to the one holding most."""
        return share(self.warm_landed, self.warm_possible, empty=1.0)

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

    def feed(self, p: Prepared, price: RequestPrice) -> None:
        """Send one request to the fleet and add up what it found."""
        n = p.rendered.n_tokens
        step = self.fleet.feed(p.sim)
        reason = attribute(p.content, step, n=n, shared=p.match.prefix)
        assert self.fleet.server is not None
        self.routes.append(RequestRoute(self.fleet.server, step.reusable, reason.label, reason.lost))
        self.prompt += n
        self.reusable += step.reusable
        self.cost = add_cost(self.cost, price.cost(reusable=step.reusable, write=step.write))
        if reason.kind == "routed_away":
            self.routed += 1
            self.routed_lost += reason.lost
            lost = price.lost(reusable=step.reusable, write=step.write, lost=reason.lost)
            self.routed_cost = add_cost(self.routed_cost, lost)

    def cell(self, policy: RoutingPolicy, replicas: int, sim: SimName) -> FleetCell:
        return FleetCell(
            policy=policy,
            replicas=replicas,
            sim=sim,
            prompt_tokens=self.prompt,
            reusable=self.reusable,
            cost=self.cost,
            routed_requests=self.routed,
            routed_lost=self.routed_lost,
            routed_cost=self.routed_cost,
            warm_possible=self.fleet.warm_possible,
            warm_landed=self.fleet.warm_landed,
            routes=tuple(self.routes),
        )


class ReplicaPass:
    """The replicas' pass over the meter's stream: a fleet per (policy, count, simulator)
    (see the module docstring).

    Raises:
        MeterError: a count below 1, or a simulator that does not run on servers.
    """

    def __init__(
        self,
        *,
        counts: Sequence[int] = (1, 2, 4, 8),
        policies: Sequence[RoutingPolicy] = ROUTING_POLICIES,
        simulators: Sequence[SimName] = ("sglang",),
        settings: SimSettings,
        pricer: Pricer,
        threshold: float = 0.5,
    ) -> None:
        sizes = tuple(sorted(set(counts)))
        if not sizes or sizes[0] < 1:
            raise MeterError(f"--replicas takes server counts of at least 1, got {list(counts)!r}")
        names = tuple(dict.fromkeys(simulators))
        bad = [n for n in names if n not in FLEET_SIMS]
        if bad or not names:
            raise MeterError(
                f"replicas run server simulators ({', '.join(FLEET_SIMS)}); {', '.join(bad) or 'none'} cannot be"
            )
        self.sizes, self.names, self.settings, self.pricer = sizes, names, settings, pricer
        self.policies = tuple(dict.fromkeys(policies))
        self.runs = {
            (pol, size, name): _Run(FleetSimulator(name, size, pol, settings=settings, threshold=threshold))
            for pol in self.policies
            for size in sizes
            for name in names
        }

    def feed(self, p: Prepared) -> None:
        req = p.request
        output = req.usage.output if req.usage is not None else 0
        price = self.pricer.request(
            req.model, prompt=p.rendered.n_tokens, output=output, ttl=billed_ttl(req.cache_ttl, self.settings)
        )
        for run in self.runs.values():
            run.feed(p, price)

    def finish(self) -> ReplicaReport:
        cells = tuple(run.cell(*key) for key, run in self.runs.items())
        return ReplicaReport(self.policies, self.sizes, self.names, cells)
