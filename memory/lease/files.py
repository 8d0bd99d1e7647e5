"""`FileLease`: the session lease of a home on one machine, an fcntl record lock per session.

`<home>/leases/<session id>.lock` is locked with `fcntl.lockf(LOCK_EX | LOCK_NB)`, retried
until the deadline; the file counts the takes (the lease's generation, see `SessionLease`). The kernel drops a record lock when its process dies, so a killed
holder frees the session at once. Record locks belong to the process (closing *any*
descriptor of the file drops them), so the file is opened only here, once per holder, and
the in-process gate keeps a second holder of this process out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.to_thread

from memory.errors import SessionStoreError
from memory.lease.contract import LocalGate, busy

__all__ = ["FileLease", "try_lock", "unlock"]

_SAFE = re.compile(r"[A-Za-z0-9_.-]{1,200}")


def try_lock(path: Path, *, create: bool = True) -> int | None:
    """An open descriptor holding the lock, or None when another process holds it. Blocking.

    With `create=False` a missing file raises `FileNotFoundError` (nobody holds a lease
    whose file was never made). Record locks belong to the process: closing any other
    descriptor of the file drops them, so a process that holds leases must not probe them.
    """
    if create:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (os.O_CREAT if create else 0), 0o600)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _take(path: Path) -> tuple[int, int] | None:
    """`try_lock`, then the lease's next generation: the count of takes kept in the lock file
    (8 bytes, big-endian; an empty file counts 0). Blocking."""
    fd = try_lock(path)
    if fd is None:
        return None
    try:
        raw = os.pread(fd, 8, 0)
        generation = (int.from_bytes(raw, "big") if len(raw) == 8 else 0) + 1
        os.pwrite(fd, generation.to_bytes(8, "big"), 0)
    except BaseException:
        unlock(fd)
        raise
    return fd, generation


def unlock(fd: int) -> None:
    """Release a lock `try_lock` took and close its descriptor."""
    with contextlib.suppress(OSError):
        fcntl.lockf(fd, fcntl.LOCK_UN)
    os.close(fd)


class FileLease:
    """Session leases under `directory` (usually `<home>/leases`).

    Args:
        directory: where the lock files live (created on first use).
        wait_s: how long `hold` waits for a busy session before `SessionBusyError`.
        poll_s: how often a waiter retries the lock.
    """

    def __init__(self, directory: Path, *, wait_s: float = 30.0, poll_s: float = 0.02) -> None:
        self.directory = directory
        self.wait_s = wait_s
        self._poll_s = poll_s
        self._gate = LocalGate()

    def path(self, session_id: str) -> Path:
        """The lock file of `session_id`."""
        if not _SAFE.fullmatch(session_id) or session_id.startswith("."):
            raise SessionStoreError(f"session id {session_id!r} cannot name a lease file")
        return self.directory / f"{session_id}.lock"

    async def _acquire(self, path: Path) -> tuple[int, int]:
        while True:
            try:
                taken = await anyio.to_thread.run_sync(_take, path)  # blocking: open + lockf + count
            except OSError as exc:
                raise SessionStoreError(
                    f"could not create the session lease {str(path)!r}: {exc.strerror or exc}; check that the "
                    "keel home is writable"
                ) from exc
            if taken is not None:
                return taken
            await anyio.sleep(self._poll_s * (0.5 + random.random()))

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[int | None]:
        path = self.path(session_id)
        with anyio.move_on_after(self.wait_s) as scope:
            async with self._gate.hold(session_id):
                fd, generation = await self._acquire(path)
                scope.deadline = float("inf")
                try:
                    yield generation
                finally:
                    unlock(fd)  # fast, never blocks
                return
        raise busy(session_id, self.wait_s)

    async def aclose(self) -> None:
        """Nothing to close: every lock is released by its holder."""
