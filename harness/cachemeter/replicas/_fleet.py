"""N servers behind a router, as one simulator: what each request found on the server it landed on.

Each server is a fresh simulator of one kind (`ideal`, `vllm`, `sglang`, `llamacpp`,
`llamacpp-ram`: what runs on servers a team deploys); the router (`_router`) picks one per
request. A request that landed on a server holding less of its prefix than another server
held loses the difference to `routed_away` — the miss a router causes, told apart from the
server's own evictions and timeouts. What a server "held" is the router's view (every prefix
sent there), rounded by the simulator's rule (vLLM's blocks, the recomputed last token).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from harness.cachemeter.replicas._router import Router, RoutingPolicy
from harness.cachemeter.sim import SimName, SimRequest, SimSettings, SimStep, Simulator, make_simulator

__all__ = ["FLEET_SIMS", "FleetSimulator"]

FLEET_SIMS: tuple[SimName, ...] = ("ideal", "vllm", "sglang", "llamacpp", "llamacpp-ram")


def _rule(name: SimName, settings: SimSettings) -> Callable[[int, int], int]:
    """How many of a held prefix of `p` tokens simulator `name` serves to an `n`-token request."""
    if name == "ideal":
        return lambda p, n: min(p, n)
    if name == "vllm":
        b = settings.block_size
        return lambda p, n: max(0, min(p, n - 1)) // b * b
    return lambda p, n: max(0, min(p, n - 1))


class FleetSimulator:
    """`n` servers running simulator `sim`, behind a `policy` router (see the module docstring)."""

    def __init__(
        self,
        sim: SimName,
        n: int,
        policy: RoutingPolicy,
        *,
        settings: SimSettings | None = None,
        threshold: float = 0.5,
    ) -> None:
        if sim not in FLEET_SIMS:
            raise ValueError(f"a fleet runs one of {', '.join(FLEET_SIMS)}, not {sim!r}")
        s = settings or SimSettings()
        self.sim = sim
        self.policy = policy
        self.router = Router(policy, n, threshold=threshold)
        self.servers: list[Simulator] = [make_simulator(sim, settings=s) for _ in range(n)]
        self._rule = _rule(sim, s)
        self._members: list[list[int]] = [[] for _ in range(n)]  # global index of each server's k-th request
        self._count = 0
        self.server: int | None = None
        """The server the last request went to."""
        self.warm_possible = 0
        """Requests some server already held a prefix of."""
        self.warm_landed = 0
        """Of those, the ones sent to a server holding the longest."""

    @property
    def name(self) -> str:
        return f"{self.sim}×{self.router.n} {self.policy}"

    def feed(self, request: SimRequest) -> SimStep:
        idx = self._count
        self._count += 1
        data, n = request.tokens, request.n_tokens
        held = [tree.longest(data, n) for tree in self.router.seen]
        r = self.router.pick(request, held)
        self.server = r
        best = max(held)
        if best > 0:
            self.warm_possible += 1
            self.warm_landed += held[r] == best
        step = self.servers[r].feed(dataclasses.replace(request, known_prefix=held[r]))
        self.router.seen[r].access(data, n, stamp=idx, req=idx)
        source = None if step.source is None else self._members[r][step.source]
        self._members[r].append(idx)
        step = dataclasses.replace(step, source=source)
        elsewhere = self._rule(best, n)
        if best > held[r] and elsewhere > step.potential:
            return dataclasses.replace(step, potential=elsewhere, loss="routed_away")
        return step
