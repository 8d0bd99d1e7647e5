"""What the meter finds: per request, per simulator, and the totals (plain frozen data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.cachemeter._request import ReportedUsage
from harness.cachemeter._share import share
from harness.cachemeter.attribution import Attribution
from harness.types import Purpose

__all__ = [
    "BREAK_KINDS",
    "PurposeTotals",
    "ReasonTotals",
    "ReportedTotals",
    "RequestResult",
    "SimResult",
    "SimTotals",
    "TokenRatios",
]

BREAK_KINDS = frozenset(
    {
        "model_changed",
        "tools_changed",
        "system_changed",
        "messages_changed",
        "evicted",
        "ttl_expired",
        "routed_away",
    }
)
"""Reasons that mean the cache broke: the content changed, or the cache lost what it held.
The others (`none`, `first_request`, `block_rounding`, `below_minimum`, `no_breakpoint`) are
the normal working of a cache."""


@dataclass(frozen=True, slots=True)
class SimResult:
    """One simulator's outcome on one request.

    `cost` is what the request costs under this simulator, `lost_cost` what its miss reason
    cost: the request as it was minus the same request had it read the lost tokens (None
    when unpriced).
    """

    reusable: int
    write: int
    prefix: int
    source: int | None
    reason: Attribution
    warnings: tuple[str, ...] = ()
    cost: float | None = None
    lost_cost: float | None = None
    write_cost: float | None = None

    @property
    def is_break(self) -> bool:
        """Whether the request lost tokens to a break (see `BREAK_KINDS`)."""
        return self.reason.kind in BREAK_KINDS


@dataclass(frozen=True, slots=True)
class RequestResult:
    """One request: what it was, what each simulator reused, and why not more.

    `ttl` is the cache TTL its writes are billed at; `gap` the seconds since the prefix it
    shares with an earlier request was last used (None without timestamps).
    """

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
    ttl: Literal["5m", "1h"] | None = None
    gap: float | None = None


@dataclass(frozen=True, slots=True)
class ReasonTotals:
    """Requests whose miss had one reason, the tokens and the dollars it cost (None: unpriced)."""

    requests: int = 0
    lost: int = 0
    cost: float | None = None


class TokenRatios:
    """The token-weighted ratios of a total that counts prompt, reusable and written tokens."""

    __slots__ = ()
    prompt_tokens: int
    reusable: int
    write: int

    @property
    def hit_ratio(self) -> float:
        """Token-weighted: reusable / prompt tokens."""
        return share(self.reusable, self.prompt_tokens)

    @property
    def write_ratio(self) -> float:
        """Token-weighted: tokens written to the cache / prompt tokens (0 where writes are not billed)."""
        return share(self.write, self.prompt_tokens)


@dataclass(frozen=True, slots=True)
class SimTotals(TokenRatios):
    """One simulator over the whole trace."""

    requests: int
    prompt_tokens: int
    reusable: int
    write: int
    cost: float | None
    reasons: dict[str, ReasonTotals] = field(default_factory=dict)
    write_cost: float | None = None

    @property
    def write_share(self) -> float | None:
        """The share of the cost spent on cache writes (None when unpriced)."""
        if self.cost is None or self.write_cost is None:
            return None
        return share(self.write_cost, self.cost)


@dataclass(frozen=True, slots=True)
class PurposeTotals:
    """All requests of one purpose (turn / flush / summary / search)."""

    requests: int
    prompt_tokens: int
    reusable: dict[str, int]
    write: dict[str, int]
    cost: dict[str, float | None]

    def hit_ratio(self, sim: str) -> float:
        return share(self.reusable[sim], self.prompt_tokens)


@dataclass(frozen=True, slots=True)
class ReportedTotals:
    """What providers reported, over the requests whose usage the trace recorded."""

    requests: int
    prompt_tokens: int
    cache_read: int
    cache_write: int

    @property
    def hit_ratio(self) -> float:
        return share(self.cache_read, self.prompt_tokens)
