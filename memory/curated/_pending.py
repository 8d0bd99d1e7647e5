"""`PendingWrites`: memory writes held for the user's confirmation (PENDING.jsonl).

A write whose content repeats untrusted text (a tool result, a fetched page, recalled memory,
pasted content; see `memory.provenance`) is not applied when `memory.untrusted_writes` is
`hold`: it is appended here, beside MEMORY.md, owner-only, and the user confirms or discards
it later (`keel memory pending`, `keel memory confirm N`, `keel memory discard N`). A
confirmed write goes through the store like any other (scanned, budgeted, locked).

`HeldWrites` is the contract both places keep: the file here, and the `curated_pending`
rows of a PostgreSQL deployment (`memory.curated._pg.PgHeldWrites`), where a write held by
a session on one worker is confirmed from any home.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, cast

from memory.curated import _disk
from memory.curated._entries import MemoryTarget
from memory.errors import InvalidWriteError
from memory.provenance import ORIGIN_LABELS, Origin

__all__ = [
    "PENDING_NAME",
    "HeldWrites",
    "PendingWrite",
    "PendingWrites",
    "held_stamp",
    "no_such_held_write",
    "pending_write",
]

PENDING_NAME = "PENDING.jsonl"
_TARGETS: frozenset[str] = frozenset({"memory", "user"})
_ORIGINS: frozenset[str] = frozenset(ORIGIN_LABELS)


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """One held write: the entry it would add, where its words came from, and when."""

    target: MemoryTarget
    content: str
    origin: Origin
    held_at: str
    kind: Literal["pending_write"] = "pending_write"


def held_stamp(clock: Callable[[], float]) -> str:
    """`held_at` for a write held now (ISO 8601, UTC, seconds)."""
    return datetime.fromtimestamp(clock(), tz=UTC).isoformat(timespec="seconds")


def pending_write(target: object, content: object, origin: object, held_at: object) -> PendingWrite | None:
    """A held write read back from a file line or a row; None when a field is not one keel writes."""
    if target in _TARGETS and origin in _ORIGINS and isinstance(content, str):
        return PendingWrite(cast("MemoryTarget", target), content, cast("Origin", origin), str(held_at or ""))
    return None


class HeldWrites(Protocol):
    """Where one principal's held writes live; every method blocks (call it from a thread)."""

    @property
    def location(self) -> str:
        """Where they live, safe to print."""
        ...

    def hold(self, target: MemoryTarget, content: str, origin: Origin) -> PendingWrite:
        """Keep a write for the user's confirmation."""
        ...

    def list(self) -> list[PendingWrite]:
        """The held writes, oldest first."""
        ...

    def take(self, number: int) -> PendingWrite:
        """Remove and return held write `number` (1 = the oldest).

        Raises:
            InvalidWriteError: there is no such held write.
        """
        ...


def no_such_held_write(number: int, count: int) -> InvalidWriteError:
    """The error `take` raises for a number `keel memory pending` does not list."""
    return InvalidWriteError(
        f"there is no held write number {number}; `keel memory pending` lists {count} of them"
    )


class PendingWrites:
    """The held writes of one memories directory, in the order they were held.

    Args:
        directory: the memories directory (PENDING.jsonl lives beside MEMORY.md).
        clock: Unix seconds, for `held_at`.
        lock_timeout_s: how long a change waits for the file's lock.
    """

    def __init__(
        self, directory: Path, *, clock: Callable[[], float] = time.time, lock_timeout_s: float = 10.0
    ) -> None:
        self._path = directory / PENDING_NAME
        self._clock = clock
        self._lock_timeout_s = lock_timeout_s

    @property
    def path(self) -> Path:
        """The PENDING.jsonl file."""
        return self._path

    @property
    def location(self) -> str:
        """The PENDING.jsonl file, as text."""
        return str(self._path)

    def hold(self, target: MemoryTarget, content: str, origin: Origin) -> PendingWrite:
        """Append a held write (blocking: call it in a worker thread)."""
        stamp = held_stamp(self._clock)
        pending = PendingWrite(target, content, origin, stamp)
        _disk.ensure_dir(self._path.parent)
        with _disk.locked(self._path, self._lock_timeout_s):
            _disk.append_jsonl(
                self._path, [{"target": target, "content": content, "origin": origin, "held_at": stamp}]
            )
        return pending

    def list(self) -> list[PendingWrite]:
        """The held writes, oldest first; unreadable lines are skipped (blocking)."""
        try:
            lines = self._path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        held: list[PendingWrite] = []
        for line in lines:
            try:
                raw = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(raw, dict):
                found = pending_write(
                    raw.get("target"), raw.get("content"), raw.get("origin"), raw.get("held_at")
                )
                if found is not None:
                    held.append(found)
        return held

    def take(self, number: int) -> PendingWrite:
        """Remove and return held write `number` (1 = the oldest) (blocking).

        Raises:
            InvalidWriteError: there is no such held write.
        """
        with _disk.locked(self._path, self._lock_timeout_s):
            held = self.list()
            if not 1 <= number <= len(held):
                raise no_such_held_write(number, len(held))
            taken = held.pop(number - 1)
            data = "".join(
                json.dumps(
                    {"target": p.target, "content": p.content, "origin": p.origin, "held_at": p.held_at},
                    ensure_ascii=False,
                )
                + "\n"
                for p in held
            )
            _disk.atomic_write(self._path, data.encode("utf-8"))
        return taken
