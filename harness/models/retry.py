"""`RetryingClient`: exponential backoff with full jitter around any `ModelClient`.

Only `RetryableModelError`s are retried (429, 5xx/overloaded, connection failures,
timeouts); auth, request and response errors are raised at once, because sending the same
request again cannot fix them. A `Retry-After` the server sent wins over the computed
backoff. A stream is retried only when it failed before its first event: once text has
reached the caller, replaying the reply would show it twice.
"""

from __future__ import annotations

import random as _random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import KW_ONLY, dataclass
from typing import Literal

import anyio

from harness.errors import ModelRateLimitError, ModelResponseError, ModelServerError, RetryableModelError
from harness.models.base import ModelClient, ModelEvent, provider_name
from harness.types import ModelReply, ModelRequest

__all__ = ["RetryAttempt", "RetryingClient"]


@dataclass(frozen=True, slots=True)
class RetryAttempt:
    """A failed attempt that is about to be retried (passed to `on_retry`)."""

    attempt: int
    """1-based number of the attempt that failed."""
    max_attempts: int
    delay_s: float
    """How long we wait before the next attempt."""
    error: RetryableModelError
    kind: Literal["retry_attempt"] = "retry_attempt"


class _Prepended:
    """An event iterator that first yields one already-read event."""

    def __init__(self, first: ModelEvent, rest: AsyncIterator[ModelEvent]) -> None:
        self._first: ModelEvent | None = first
        self._rest = rest

    def __aiter__(self) -> _Prepended:
        return self

    async def __anext__(self) -> ModelEvent:
        if self._first is not None:
            event, self._first = self._first, None
            return event
        return await self._rest.__anext__()


@dataclass(eq=False)
class RetryingClient:
    """Wraps a `ModelClient` with retries."""

    inner: ModelClient
    """The client that does the work."""
    _: KW_ONLY
    max_attempts: int = 4
    """Total attempts per call, the first included (1 disables retrying)."""
    base_delay_s: float = 0.5
    """Backoff base: attempt n waits up to `base * 2**(n-1)` seconds."""
    max_delay_s: float = 30.0
    """Cap of the computed backoff."""
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    """Awaited with each delay (tests pass a recorder)."""
    random: Callable[[], float] = _random.random
    """Uniform [0, 1) source for the full jitter."""
    max_retry_after_s: float = 300.0
    """A `Retry-After` longer than this is not waited out; the error is raised at once so the
    caller can decide."""
    on_retry: Callable[[RetryAttempt], None] | None = None
    """Called before each wait (the turn loop turns it into a warning event)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts!r}")

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def provider_name(self) -> str:
        """The wrapped client's, for telemetry."""
        return provider_name(self.inner)

    def delay_for(self, attempt: int, error: RetryableModelError) -> float | None:
        """Seconds to wait after failed attempt `attempt`, or None to give up and raise."""
        if attempt >= self.max_attempts:
            return None
        hinted: float | None = (
            error.retry_after if isinstance(error, ModelRateLimitError | ModelServerError) else None
        )
        if hinted is not None:
            return hinted if hinted <= self.max_retry_after_s else None
        return self.random() * min(self.max_delay_s, self.base_delay_s * 2.0 ** (attempt - 1))

    async def _wait(self, attempt: int, error: RetryableModelError) -> None:
        delay = self.delay_for(attempt, error)
        if delay is None:
            raise error
        if self.on_retry is not None:
            self.on_retry(RetryAttempt(attempt, self.max_attempts, delay, error))
        await self.sleep(delay)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """`inner.complete` with retries; the last error is raised when attempts run out."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self.inner.complete(request)
            except RetryableModelError as exc:
                await self._wait(attempt, exc)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        """`inner.stream`, retried while nothing has been yielded yet."""
        attempt = 0
        while True:
            attempt += 1
            failure: RetryableModelError | None = None
            async with AsyncExitStack() as stack:
                try:
                    events = await stack.enter_async_context(self.inner.stream(request))
                    first = await events.__anext__()
                except RetryableModelError as exc:
                    failure = exc
                except StopAsyncIteration as exc:
                    raise ModelResponseError(
                        f"{self.model_name}: the reply stream ended without any event"
                    ) from exc
                else:
                    yield _Prepended(first, events)
                    return
            # The failed attempt's connection is closed (stack exited) before we wait.
            await self._wait(attempt, failure)
