"""The simulator contract: what a simulator is fed, what it answers, and the protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from harness.cachemeter._seq import ITEM

__all__ = [
    "Clock",
    "LossReason",
    "PolicyReason",
    "SimName",
    "SimRequest",
    "SimStep",
    "Simulator",
    "check_idle",
    "idle_cutoff",
    "last_token_rule",
]

SimName: TypeAlias = Literal[
    "ideal", "vllm", "sglang", "llamacpp", "llamacpp-ram", "openai", "anthropic", "keel"
]
LossReason: TypeAlias = Literal["evicted", "ttl_expired", "routed_away"]
"""A longer prefix had been cached but was gone when this request came (`routed_away`: it was
on another server of a fleet)."""
PolicyReason: TypeAlias = Literal["block_rounding", "below_minimum", "no_breakpoint"]
"""The cache held the prefix but its rules reuse less of it."""


@dataclass(frozen=True, slots=True)
class SimRequest:
    """One rendered request as simulators see it.

    Attributes:
        tokens: the packed token ids (see `harness.cachemeter.pack`).
        model: caches are per model: a request never reuses another model's entries.
        timestamp: seconds (trace time) for TTL rules; None = same time as the previous request.
        breakpoints: token positions (prefix lengths) of the request's Anthropic cache_control
            markers, in the order the trace lists them.
        boundaries: token positions where content blocks end (tools, system blocks, each
            message), ascending: where Anthropic's lookback checks for earlier entries.
        ttl: the cache_control TTL the request asked for.
        known_prefix: the longest prefix this request shares with any earlier request of the
            same model (the `ideal` answer). The meter fills it so eviction-based simulators
            can tell what they lost to eviction; None when unknown.
        session: the conversation the request belongs to (what a router keeps together).
        generated: the packed reply tokens the model evaluated after this prompt (what keel's
            server's live state holds next); empty when unknown.
        stable: leading tokens of the system turn and tools (what keel's server keeps on disk).
        scope: whose KV states the request may reuse (keel's server: the request's `user`).
    """

    tokens: bytes
    model: str = ""
    timestamp: float | None = None
    breakpoints: tuple[int, ...] = ()
    boundaries: tuple[int, ...] = ()
    ttl: Literal["5m", "1h"] | None = None
    known_prefix: int | None = None
    session: str | None = None
    generated: bytes = b""
    stable: int = 0
    scope: str = ""

    @property
    def n_tokens(self) -> int:
        return len(self.tokens) // ITEM


@dataclass(frozen=True, slots=True)
class SimStep:
    """A simulator's answer for one request.

    Attributes:
        reusable: prompt tokens served from the cache (Anthropic: cache_read).
        prefix: the matched prefix length against what the cache held, before the
            simulator's rounding and minimums.
        source: feed index of the earlier request that provided the prefix, if any.
        potential: what `reusable` would have been had nothing been evicted or expired.
        write: tokens newly written to the cache and billed as such (Anthropic
            cache_creation); 0 for caches that do not bill writes.
        loss: why `potential` > `reusable`.
        policy: which rule keeps `potential` below the shared prefix, when one does.
        warnings: problems with the request itself (e.g. more than 4 breakpoints).
    """

    reusable: int
    prefix: int
    source: int | None
    potential: int
    write: int = 0
    loss: LossReason | None = None
    policy: PolicyReason | None = None
    warnings: tuple[str, ...] = ()


class Simulator(Protocol):
    """Feed requests in trace order; each call answers for that request, then caches it."""

    @property
    def name(self) -> str: ...

    def feed(self, request: SimRequest) -> SimStep: ...


def last_token_rule(prefix: int, n: int) -> int:
    """The engines always compute the prompt's last token: at most `n - 1` tokens are reused."""
    return max(0, min(prefix, n - 1))


class Clock:
    """Trace time as a simulator sees it: a request without a timestamp comes when the previous one did."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def tick(self, request: SimRequest) -> float:
        """Advance to `request`'s time; return it."""
        if request.timestamp is not None:
            self.now = request.timestamp
        return self.now


def idle_cutoff(now: float, idle_s: float | None) -> float | None:
    """Entries last used before this moment are gone (None: nothing expires)."""
    return None if idle_s is None else now - idle_s


def check_idle(idle_s: float | None) -> None:
    """Raises ValueError unless `idle_s` is None or positive."""
    if idle_s is not None and not idle_s > 0:
        raise ValueError(f"idle_s must be a positive number of seconds, got {idle_s!r}")
