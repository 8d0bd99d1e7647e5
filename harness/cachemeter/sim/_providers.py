"""Simulators of hosted provider caches: OpenAI (automatic) and Anthropic (breakpoints).

Rules (shared/reference/caching.md §2.1–2.2):

- OpenAI: exact-prefix matches only, nothing below 1,024 tokens, hits counted in 128-token
  steps: `0 if match < 1024 else 1024 + 128 * floor((match - 1024) / 128)`. A cached prefix
  lives for an idle TTL (default 10 minutes) from its last use, measured on trace timestamps.
- Anthropic: reads only at the request's `cache_control` breakpoints (at most 4 count; more
  are reported and the extra ones ignored) whose exact prefix an earlier request wrote
  within its TTL (5 minutes or 1 hour; a hit refreshes it; `ttl_s` overrides every request's
  TTL, for what-if sweeps). Prefixes shorter than the
  model's minimum are never cached. The request writes its breakpoints; it is billed
  `cache_read` for the read prefix and `cache_write` from there to its last cacheable
  breakpoint. A request without breakpoints uses automatic mode: one breakpoint at the end
  of the last message. Anthropic also checks about 20 earlier content-block boundaries
  before a breakpoint for entries; automatic mode cannot hit a growing conversation
  without that, so automatic mode uses that lookback (`automatic_lookback`), while explicit
  breakpoints read only at themselves unless `explicit_lookback` is raised.

Both keep one radix tree per model; entries are never deleted, only judged expired, so a
miss can be told apart as `ttl_expired` (the prefix was there and timed out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.cachemeter.sim._tree import Access, ModelTrees
from harness.cachemeter.sim._types import PolicyReason, SimRequest, SimStep, check_idle

__all__ = ["AnthropicSimulator", "OpenAISimulator", "anthropic_min_tokens"]

_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


class OpenAISimulator:
    """OpenAI automatic prompt caching (see the module docstring)."""

    def __init__(self, *, ttl_s: float = 600.0, minimum: int = 1024, step: int = 128) -> None:
        if ttl_s <= 0 or minimum < 1 or step < 1:
            raise ValueError(f"need ttl_s > 0, minimum >= 1, step >= 1; got {ttl_s!r}, {minimum!r}, {step!r}")
        self.ttl_s = ttl_s
        self.minimum = minimum
        self.step = step
        self._m = ModelTrees()

    @property
    def name(self) -> str:
        return "openai"

    def rule(self, match: int) -> int:
        """Tokens OpenAI reports cached for an exact-prefix match of `match` tokens."""
        if match < self.minimum:
            return 0
        return self.minimum + self.step * ((match - self.minimum) // self.step)

    def feed(self, request: SimRequest) -> SimStep:
        idx, now = self._m.next(request)
        tree = self._m.tree(request.model)
        access = tree.access(
            request.tokens, request.n_tokens, stamp=idx, req=idx, now=now, expire_before=now - self.ttl_s
        )
        hits = self.rule(access.alive)
        potential = self.rule(access.matched)
        policy: PolicyReason = "below_minimum" if access.matched < self.minimum else "block_rounding"
        return SimStep(
            reusable=hits,
            prefix=access.alive,
            source=access.alive_source if hits else None,
            potential=potential,
            loss="ttl_expired" if potential > hits else None,
            policy=policy,
        )


# (family, version) → minimum cacheable prompt, from caching.md §2.1. Unknown models: 1,024.
_MINIMUMS: dict[tuple[str, str], int] = {
    ("sonnet", "3.5"): 1024,
    ("sonnet", "3.7"): 1024,
    ("sonnet", "4"): 1024,
    ("sonnet", "4.5"): 1024,
    ("sonnet", "4.6"): 1024,
    ("opus", "3"): 1024,
    ("opus", "4"): 1024,
    ("opus", "4.1"): 1024,
    ("opus", "4.5"): 4096,
    ("opus", "4.6"): 4096,
    ("opus", "4.7"): 2048,
    ("haiku", "3"): 2048,
    ("haiku", "3.5"): 2048,
    ("haiku", "4.5"): 4096,
}
_FAMILY_MAJOR_MINIMUMS: dict[tuple[str, str], int] = {("opus", "5"): 512}
_VERSION = r"(\d+)(?:[-.](\d))?(?!\d)"


def anthropic_min_tokens(model: str) -> int:
    """The minimum cacheable prefix for an Anthropic model name (1,024 when unknown).

    Understands both naming orders: `claude-3-5-haiku-20241022` and `claude-haiku-4-5`.
    """
    name = model.lower()
    for family in ("opus", "sonnet", "haiku"):
        for pattern in (family + "-" + _VERSION, _VERSION + "-" + family):
            found = re.search(pattern, name)
            if found is None or len(found.group(1)) > 2:  # absent, or a date stamp
                continue
            major, minor = found.group(1), found.group(2)
            version = major if minor is None else f"{major}.{minor}"
            if (family, version) in _MINIMUMS:
                return _MINIMUMS[(family, version)]
            return _FAMILY_MAJOR_MINIMUMS.get((family, major), 1024)
    return 1024


@dataclass(slots=True)
class _Entry:
    """A prefix written at a breakpoint: when it was last written or read, for how long."""

    stamp: float
    ttl_s: float
    writer: int


class AnthropicSimulator:
    """Anthropic prompt caching with cache_control breakpoints (see the module docstring)."""

    def __init__(
        self,
        *,
        min_tokens: int | None = None,
        automatic_lookback: int = 20,
        explicit_lookback: int = 0,
        max_breakpoints: int = 4,
        ttl_s: float | None = None,
    ) -> None:
        check_idle(ttl_s)
        self.ttl_s = ttl_s
        self.min_tokens = min_tokens
        self.automatic_lookback = automatic_lookback
        self.explicit_lookback = explicit_lookback
        self.max_breakpoints = max_breakpoints
        self._m = ModelTrees()

    @property
    def name(self) -> str:
        return "anthropic"

    def _candidates(self, breakpoints: list[int], boundaries: tuple[int, ...], lookback: int) -> list[int]:
        found = set(breakpoints)
        if lookback > 0:
            for bp in breakpoints:
                earlier = [b for b in boundaries if b < bp]
                found.update(earlier[-lookback:])
        return sorted(found, reverse=True)

    @staticmethod
    def _policy(
        access: Access, request: SimRequest, candidates: list[int], shared: int, minimum: int, now: float
    ) -> PolicyReason:
        """Why the shared prefix was not read: too short, or no breakpoint where an entry was.

        Entries sit at earlier requests' breakpoints, which are content-block ends; the shared
        prefix has the same block ends in this request, so checking those finds them.
        """
        if shared < minimum:
            return "below_minimum"
        for p in request.boundaries:
            if minimum <= p <= shared:
                node = access.locate(p)
                entry = node.marks.get(p) if node is not None and node.marks else None
                if isinstance(entry, _Entry) and entry.stamp + entry.ttl_s >= now:
                    return "no_breakpoint"  # an entry was there to read, at a block end of ours
        if all(p < minimum for p in candidates if p <= shared):
            return "below_minimum"
        return "no_breakpoint"

    def feed(self, request: SimRequest) -> SimStep:
        idx, now = self._m.next(request)
        n = request.n_tokens
        warnings: list[str] = []
        breakpoints = [min(max(p, 0), n) for p in request.breakpoints]
        automatic = not breakpoints
        if automatic:
            breakpoints = [request.boundaries[-1] if request.boundaries else n]
        if len(breakpoints) > self.max_breakpoints:
            warnings.append(
                f"{len(breakpoints)} cache_control breakpoints; Anthropic allows {self.max_breakpoints}, "
                f"only the first {self.max_breakpoints} were simulated"
            )
            breakpoints = breakpoints[: self.max_breakpoints]
        minimum = self.min_tokens if self.min_tokens is not None else anthropic_min_tokens(request.model)
        lookback = self.automatic_lookback if automatic else self.explicit_lookback
        candidates = self._candidates(breakpoints, request.boundaries, lookback)

        tree = self._m.tree(request.model)
        access = tree.access(request.tokens, n, stamp=now, req=idx)
        shared = access.matched

        read, potential, source = 0, 0, None
        for p in candidates:
            if p > shared or p < minimum or p <= 0:
                continue
            node = access.locate(p)
            entry = node.marks.get(p) if node is not None and node.marks else None
            if not isinstance(entry, _Entry):
                continue
            potential = max(potential, p)
            if entry.stamp + entry.ttl_s >= now:
                read, source = p, entry.writer
                entry.stamp = now  # a hit refreshes the entry's TTL
                break

        ttl_s = self.ttl_s if self.ttl_s is not None else _TTL_SECONDS[request.ttl or "5m"]
        cacheable = [p for p in breakpoints if p >= minimum and p > 0]
        for p in cacheable:
            node = access.locate(p)
            assert node is not None
            if node.marks is None:
                node.marks = {}
            node.marks[p] = _Entry(now, ttl_s, idx)
        write = max(0, max(cacheable, default=0) - read)

        policy: PolicyReason | None = None
        if potential < min(shared, n - 1):
            policy = self._policy(access, request, candidates, shared, minimum, now)
        return SimStep(
            reusable=read,
            prefix=read,
            source=source,
            potential=potential,
            write=write,
            loss="ttl_expired" if potential > read else None,
            policy=policy,
            warnings=tuple(warnings),
        )
