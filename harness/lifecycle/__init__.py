# The prompt-cache lifecycle: act on what the cache meter knows about a provider's cache.
# `economics.py` (a provider's TTL and cache prices), `policy.py` (at a prefix's deadline:
# refresh, compact, or let it expire), `controller.py` (the async keeper that runs during
# a turn's tool calls and a user's idle time, and traces every refresh).
"""Keep-warm and compaction before expiry."""

from harness.lifecycle.controller import CachedPrefix, CacheKeeper
from harness.lifecycle.economics import CacheEconomics, economics_for
from harness.lifecycle.policy import LifecycleSettings, Plan, WaitReason, next_action

__all__ = [
    "CacheEconomics",
    "CacheKeeper",
    "CachedPrefix",
    "LifecycleSettings",
    "Plan",
    "WaitReason",
    "economics_for",
    "next_action",
]
