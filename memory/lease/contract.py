"""`SessionLease`, and the in-process gate every lease puts in front of its cross-process lock.

Neither cross-process lock excludes a second holder inside the same process: an advisory
lock is re-entrant on its connection, and POSIX record locks belong to the process. So a
lease first takes its `LocalGate` (one `anyio.Lock` per session id, dropped when nobody
holds or waits for it), then the cross-process lock. Both waits share one deadline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

import anyio

from memory.errors import SessionBusyError

__all__ = ["LocalGate", "SessionLease", "busy"]


class SessionLease(Protocol):
    """One turn per session at a time, across every process sharing the lease's backend.

    A session holds the lease of its lineage root (`harness.loop.Session`): a compression
    continues a session under a new id mid-turn, and parent and child must share one lease."""

    def hold(self, session_id: str) -> AbstractAsyncContextManager[int | None]:
        """Hold the lease of `session_id` for the block; yields its generation.

        Every take of a session's lease, by any holder in any process, raises its generation
        by one: a holder that gets its own last generation plus one knows nobody held the
        session in between, so nobody added turns it has not seen (None: this lease cannot tell).

        Raises:
            SessionBusyError: another holder kept it past the lease's bounded wait.
        """
        ...


def busy(session_id: str, wait_s: float) -> SessionBusyError:
    """The error a waiter gets after `wait_s` seconds."""
    return SessionBusyError(
        f"session {session_id!r} is busy: another turn or compression of it (or of a session a "
        f"compression continued it in) held the session lease for more than {wait_s:g} s (on this or "
        "another worker); nothing was run. Retry when it ends."
    )


class LocalGate:
    """One holder per session id inside this process."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[anyio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's in-process lock (the caller bounds the wait with a timeout scope)."""
        lock, users = self._locks.get(session_id, (anyio.Lock(), 0))
        self._locks[session_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session_id]
            if users == 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)
