"""Routing policies: which of N servers a request goes to.

    round_robin  request k → server k mod N, whatever it holds (a plain load balancer)
    session      every request of a conversation → the server its first request went to;
                 a new conversation → the server with the fewest conversations so far
                 (session affinity, sticky sessions)
    prefix       → the server whose cache shares the longest prefix with the request, when that
                 prefix covers at least `threshold` of it; otherwise → the server holding the
                 fewest tokens (cache-aware routing as SGLang's router does it, without its
                 load-balancing override — the meter has no notion of load)

The router sees what it sent where (one radix tree per server, never evicted: a router's
approximate view), not the servers' caches.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

from harness.cachemeter.sim import RadixTree, SimRequest

__all__ = ["ROUTING_POLICIES", "Router", "RoutingPolicy"]

RoutingPolicy: TypeAlias = Literal["round_robin", "session", "prefix"]
ROUTING_POLICIES: tuple[RoutingPolicy, ...] = get_args(RoutingPolicy)


class Router:
    """One policy over `n` servers; `seen[i]` is what server i was sent (see the module doc)."""

    def __init__(self, policy: RoutingPolicy, n: int, *, threshold: float = 0.5) -> None:
        if n < 1:
            raise ValueError(f"a fleet needs at least one server, got {n!r}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {threshold!r}")
        self.policy = policy
        self.n = n
        self.threshold = threshold
        self.seen = [RadixTree() for _ in range(n)]
        self._count = 0
        self._sticky: dict[str, int] = {}
        self._sessions = [0] * n

    def pick(self, request: SimRequest, held: list[int]) -> int:
        """The server for `request`; `held[i]` is the prefix server i's view shares with it."""
        k = self._count
        self._count += 1
        if self.policy == "round_robin":
            return k % self.n
        if self.policy == "session":
            key = request.session or ""
            found = self._sticky.get(key)
            if found is None:
                found = min(range(self.n), key=lambda i: (self._sessions[i], i))
                self._sticky[key] = found
                self._sessions[found] += 1
            return found
        best = max(range(self.n), key=lambda i: (held[i], -i))
        if request.n_tokens and held[best] >= self.threshold * request.n_tokens:
            return best
        return min(range(self.n), key=lambda i: (self.seen[i].size, i))
