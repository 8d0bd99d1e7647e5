"""`CacheKeeper`: acts on a session's cached prefix while the session waits.

The loop sends every request through one path (`harness.loop.calls`), which remembers the
last request that carried the session's prefix, when it went, and how many prompt tokens it
had (`CachedPrefix`). While a turn waits on its tools, or the user has not answered yet,
`waiting(reason)` runs a task that sleeps until the prefix's next deadline and does what
`policy.next_action` says: sends a refresh (the session's callback: the last request again
with one output token, traced with its reason and expected cost) or compacts the session
(an idle user only). The task is cancelled when the wait ends; a refresh or a compaction
that started finishes first (both are shielded: a refresh asks for one token, and a sent
one must be traced and accounted; a half-done compaction would leave the session between
rows). Nothing runs when both features are off, or the provider's cache does not expire.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field

import anyio

from harness.lifecycle.economics import CacheEconomics
from harness.lifecycle.policy import LifecycleSettings, Plan, WaitReason, next_action
from harness.types import ModelRequest

__all__ = ["CacheKeeper", "CachedPrefix"]


@dataclass(frozen=True, slots=True)
class CachedPrefix:
    """The last request that wrote or read the session's prefix.

    Attributes:
        request: the request (a refresh sends it again).
        used_at: when it was sent (`time.monotonic()`).
        tokens: its prompt tokens, as the provider reported them (or estimated).
    """

    request: ModelRequest
    used_at: float
    tokens: int


@dataclass(eq=False)
class CacheKeeper:
    """Keeps one session's prefix warm, or compacts it, during waits (see the module doc)."""

    economics: CacheEconomics | None
    """The provider's cache; None when unknown (the keeper does nothing)."""
    settings: LifecycleSettings
    """What is on, and the windows."""
    _: KW_ONLY
    prefix: Callable[[], CachedPrefix | None]
    """Reads the session's current `CachedPrefix` (None before the first request)."""
    refresh: Callable[[Plan, CachedPrefix], Awaitable[None]]
    """Sends a refresh for a plan."""
    compact: Callable[[Plan], Awaitable[None]] | None = None
    """Compacts the session for a plan (None: never compacts)."""
    clock: Callable[[], float] = time.monotonic
    """The clock `CachedPrefix.used_at` is on."""
    actions: list[Plan] = field(default_factory=list, init=False)
    """Every action taken, in order (for tests and reports)."""

    @property
    def active(self) -> bool:
        s = self.settings
        wanted = s.keep_warm or (s.compact_before_expiry and self.compact is not None)
        return wanted and self.economics is not None and self.economics.ttl_s is not None

    @asynccontextmanager
    async def waiting(self, reason: WaitReason) -> AsyncIterator[None]:
        """Keep the prefix for the duration of the block (a tool run, or the user's silence)."""
        if not self.active or self.prefix() is None:
            yield
            return
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._keep, reason, self.clock())
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _keep(self, reason: WaitReason, started: float) -> None:
        assert self.economics is not None
        refreshes = 0
        while (prefix := self.prefix()) is not None:
            plan = next_action(
                self.economics,
                self.settings,
                reason=reason,
                wait_started=started,
                last_use=prefix.used_at,
                prefix_tokens=prefix.tokens,
                refreshes=refreshes,
            )
            if plan is None or (plan.action == "compact" and self.compact is None):
                return
            await anyio.sleep(max(0.0, plan.at - self.clock()))
            self.actions.append(plan)
            if plan.action == "refresh":
                with anyio.CancelScope(shield=True):  # one output token: sent means traced and billed
                    await self.refresh(plan, prefix)
                refreshes += 1
                continue
            assert self.compact is not None
            with anyio.CancelScope(shield=True):
                await self.compact(plan)
            return
