"""What to do before a cached prefix expires: refresh it, compact the session, or let it go.

The decision is made for one wait at a time — a turn waiting on its tools (`tool_wait`) or
a user who has not answered yet (`user_idle`) — at the prefix's *deadline*: its last use
plus the provider's TTL, less a safety margin. At that moment:

- Nothing after the wait's window (`tool_wait_max_s`, `idle_window_s`): the prefix expires.
- **Compact** (flush included), for an idle user only, when it is on, the prefix is at
  least `compact_min_tokens`, this is the last deadline keep-warm could cover (it is off,
  out of budget, or the next deadline falls outside the window), and a compaction now —
  one summary request reading the still-warm prefix, then the next turn writing the
  shorter prefix — costs less than the next turn re-writing the whole prefix.
- Else **refresh** (keep-warm) when it is on, as long as everything spent on refreshes
  during this wait, this one included, stays below the re-write it prevents
  (`rewrite_extra`: the next request paying a cache write instead of a read). That is the
  ski-rental rule — rent until the rent would reach the price of buying — so however long
  the wait turns out to be, keep-warm never spends more than twice what the best choice
  made with hindsight would have. A refresh re-reads the prefix, which buys one more TTL.
- Else let it expire.

Pure functions of numbers: the async controller (`controller.py`) and the benchmark
(`benchmarks/cache_lifecycle.py`) both decide with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.lifecycle.economics import CacheEconomics

__all__ = ["LifecycleSettings", "Plan", "WaitReason", "next_action"]

WaitReason = Literal["tool_wait", "user_idle"]


@dataclass(frozen=True, slots=True)
class LifecycleSettings:
    """The `cache_lifecycle:` config section, as the controller reads it.

    Attributes:
        keep_warm: send cache-refreshing requests during waits.
        margin_s: act this long before the prefix would expire.
        tool_wait_max_s: refresh during a tool wait only this long after it started.
        idle_window_s: refresh (or compact) for an idle user only this long after the last reply.
        compact_before_expiry: compact an idle session just before expiry when that is cheaper.
        compact_min_tokens: only prefixes at least this long are compacted.
        compact_ratio: the compacted prefix's expected size, as a share of the prefix now.
        summary_tokens: the summary's expected length (output tokens of the compaction).
    """

    keep_warm: bool = False
    margin_s: float = 15.0
    tool_wait_max_s: float = 3600.0
    idle_window_s: float = 1800.0
    compact_before_expiry: bool = False
    compact_min_tokens: int = 20_000
    compact_ratio: float = 0.3
    summary_tokens: int = 1_500


@dataclass(frozen=True, slots=True)
class Plan:
    """The next thing to do for a wait, and why.

    Attributes:
        at: when (the clock the caller passed).
        action: `refresh` or `compact`.
        reason: the wait it serves.
        cost: the action's expected dollars.
        saving: the dollars it is expected to save on the next request.
    """

    at: float
    action: Literal["refresh", "compact"]
    reason: WaitReason
    cost: float
    saving: float


def compaction_cost(econ: CacheEconomics, settings: LifecycleSettings, prefix_tokens: int) -> float:
    """A compaction before expiry: the summary request on the warm prefix, then the new prefix written."""
    summary = econ.warm_cost(prefix_tokens) + settings.summary_tokens * econ.output_usd
    return summary + econ.cold_cost(round(prefix_tokens * settings.compact_ratio))


def next_action(
    econ: CacheEconomics,
    settings: LifecycleSettings,
    *,
    reason: WaitReason,
    wait_started: float,
    last_use: float,
    prefix_tokens: int,
    refreshes: int,
) -> Plan | None:
    """The action at the prefix's next deadline, or None when the prefix should be let go.

    Args:
        econ: the provider's cache.
        settings: what is on, and the windows.
        reason: the kind of wait.
        wait_started: when the wait began.
        last_use: when the prefix was last written or read (a request, or a refresh).
        prefix_tokens: the cached prefix's length.
        refreshes: refreshes already sent during this wait.
    """
    if econ.ttl_s is None or prefix_tokens < econ.min_tokens:
        return None
    at = max(wait_started, last_use + econ.ttl_s - settings.margin_s)
    window = settings.tool_wait_max_s if reason == "tool_wait" else settings.idle_window_s
    if at > wait_started + window:
        return None
    extra = econ.rewrite_extra(prefix_tokens)
    refresh = econ.refresh_cost(prefix_tokens)

    def affordable(count: int) -> bool:  # ski rental: rent while the rent stays below the purchase
        return settings.keep_warm and count * refresh < extra

    last_chance = not affordable(refreshes + 2) or at + econ.ttl_s - settings.margin_s > wait_started + window
    if reason == "user_idle" and last_chance and settings.compact_before_expiry:
        cold = econ.cold_cost(prefix_tokens)
        compact = compaction_cost(econ, settings, prefix_tokens)
        if prefix_tokens >= settings.compact_min_tokens and compact < cold:
            return Plan(at, "compact", reason, compact, cold)
    if affordable(refreshes + 1):
        return Plan(at, "refresh", reason, refresh, extra)
    return None
