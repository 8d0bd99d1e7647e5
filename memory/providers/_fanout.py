"""One call to one provider, isolated: the breaker check, the time bound, the verdict.

`Fanout` holds the registered providers (the built-in one first) and calls their hooks one
at a time, each behind its circuit breaker and `call_timeout_s`; a provider that raises,
hangs or is paused is logged, recorded in the warnings and skipped. The manager's tool
routing and prefetch rounds call providers only through it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

import anyio

from memory.providers._breaker import CircuitBreaker
from memory.providers.contract import AgentContext, MemoryProvider

__all__ = ["Entry", "Fanout", "Outcome"]

_log = logging.getLogger("memory.providers.manager")

T = TypeVar("T")

_MAX_WARNINGS = 500


@dataclass(eq=False)
class Entry:
    """One registered provider and its per-provider state."""

    provider: MemoryProvider
    name: str
    external: bool
    breaker: CircuitBreaker | None
    tools: list[str] = field(default_factory=list)
    # Serializes a provider's writes so turn N's sync lands before turn N+1's (anyio locks
    # wake waiters in FIFO order and tasks start in the order they were started).
    write_lock: anyio.Lock = field(default_factory=anyio.Lock)
    prefetch_running: bool = False

    def implements(self, hook: str) -> bool:
        """Whether the provider overrides `hook` (False: it is `MemoryProvider`'s no-op default).

        A per-turn hook nobody overrides is not called at all: no task, no time bound, no
        breaker trial spent on a call that cannot do anything.
        """
        method = getattr(self.provider, hook, None)
        return getattr(method, "__func__", None) is not getattr(MemoryProvider, hook, None)


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    ok: bool
    value: T | None = None
    reason: Literal["", "paused", "failed", "timed out"] = ""
    detail: str = ""


class Fanout:
    """The providers in registration order, and the one isolated way to call them."""

    def __init__(
        self,
        *,
        call_timeout_s: float,
        breaker_pause_s: float,
        warn: Callable[[str], None] | None,
    ) -> None:
        self.entries: list[Entry] = []
        self.call_timeout_s = call_timeout_s
        self._breaker_pause_s = breaker_pause_s
        self._warn_callback = warn
        self._warnings: deque[str] = deque(maxlen=_MAX_WARNINGS)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._warnings)

    def writers(self, agent_context: AgentContext) -> list[Entry]:
        """The providers that may hear writes in this context (externals only as `primary`)."""
        if agent_context == "primary":
            return list(self.entries)
        return [e for e in self.entries if not e.external]

    def entry(self, name: str) -> Entry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        names = tuple(e.name for e in self.entries)
        raise KeyError(f"no memory provider named {name!r}; registered: {names!r}")

    async def locked_call(self, entry: Entry, hook: str, fn: Callable[[], Awaitable[None]]) -> None:
        async with entry.write_lock:
            await self.call(entry, hook, fn)

    async def call(self, entry: Entry, hook: str, fn: Callable[[], Awaitable[T]]) -> Outcome[T]:
        """Call one provider hook with a breaker check, a time bound and exception isolation."""
        bound = self.call_timeout_s
        breaker = entry.breaker
        if breaker is not None and not breaker.acquire():
            return Outcome(ok=False, reason="paused")
        try:
            with anyio.move_on_after(bound) as scope:
                value = await fn()
        except Exception as exc:
            self._failed(entry, hook, f"raised {exc!r}")
            return Outcome(ok=False, reason="failed", detail=str(exc) or type(exc).__name__)
        except BaseException:
            # Cancelled from outside: no verdict on the provider, but free the trial slot.
            if breaker is not None:
                breaker.abandoned()
            raise
        if scope.cancelled_caught:
            self._failed(entry, hook, f"did not finish within {bound:g} s")
            return Outcome(ok=False, reason="timed out", detail=f"no answer within {bound:g} s")
        if breaker is not None:
            breaker.succeeded()
        return Outcome(ok=True, value=value)

    def _failed(self, entry: Entry, hook: str, what: str) -> None:
        self.warn(f"memory provider {entry.name!r} {what} in {hook}; skipped")
        if entry.breaker is not None and entry.breaker.failed():
            self.warn(
                f"memory provider {entry.name!r} failed {entry.breaker.consecutive_failures} times in a row; "
                f"pausing it for {self._breaker_pause_s:g} s"
            )

    def warn(self, message: str) -> None:
        _log.warning("%s", message)
        self._warnings.append(message)
        if self._warn_callback is not None:
            try:
                self._warn_callback(message)
            except Exception:
                _log.exception("the memory-manager warn callback raised")
