"""A circuit breaker per external memory provider.

An external provider (a cloud API, a daemon) that keeps failing should stop costing the
session time and log lines. After `failures` consecutive failures the breaker opens: no
call reaches the provider for `pause_s` seconds of the injected clock. Then it half-opens
and lets exactly one trial call through; a success closes it, a failure opens it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

__all__ = ["BreakerState", "CircuitBreaker"]

BreakerState: TypeAlias = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Counts consecutive failures and decides whether a call may go through.

    Args:
        failures: consecutive failures that open the breaker.
        pause_s: how long it stays open before one trial call is allowed.
        clock: monotonic seconds (injected so tests can move time).
    """

    def __init__(self, *, failures: int, pause_s: float, clock: Callable[[], float]) -> None:
        if failures < 1:
            raise ValueError(f"breaker failures must be at least 1, got {failures!r}")
        self._threshold = failures
        self._pause_s = pause_s
        self._clock = clock
        self._consecutive = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._trial_in_flight or self._clock() - self._opened_at >= self._pause_s:
            return "half_open"
        return "open"

    @property
    def consecutive_failures(self) -> int:
        return self._consecutive

    def seconds_until_trial(self) -> float:
        """Seconds of pause left (0 when closed or ready for a trial)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._pause_s - (self._clock() - self._opened_at))

    def acquire(self) -> bool:
        """Whether a call may go through now; a granted half-open trial must be resolved
        with `succeeded`, `failed` or `abandoned`."""
        state = self.state
        if state == "closed":
            return True
        if state == "open" or self._trial_in_flight:
            return False
        self._trial_in_flight = True
        return True

    def succeeded(self) -> None:
        self._consecutive = 0
        self._opened_at = None
        self._trial_in_flight = False

    def failed(self) -> bool:
        """Record a failure; True when this failure opened (or re-opened) the breaker."""
        self._consecutive += 1
        if self._trial_in_flight or (self._opened_at is None and self._consecutive >= self._threshold):
            self._trial_in_flight = False
            self._opened_at = self._clock()
            return True
        return False

    def abandoned(self) -> None:
        """A granted call ended without a verdict (cancelled): let another trial through."""
        self._trial_in_flight = False
