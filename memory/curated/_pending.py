"""`PendingWrites`: memory writes held for the user's confirmation (PENDING.jsonl).

A write whose content repeats untrusted text (a tool result, a fetched page, recalled memory,
pasted content; see `memory.provenance`) is not applied when `memory.untrusted_writes` is
`hold`: it is appended here, beside MEMORY.md, owner-only, and the user confirms or discards
it later (`keel memory pending`, `keel memory confirm N`, `keel memory discard N`). A
confirmed write goes through the store like any other (scanned, budgeted, locked).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from memory.curated import _disk
from memory.curated._entries import MemoryTarget
from memory.errors import InvalidWriteError
from memory.provenance import Origin

__all__ = ["PENDING_NAME", "PendingWrite", "PendingWrites"]

PENDING_NAME = "PENDING.jsonl"
_TARGETS: frozenset[str] = frozenset({"memory", "user"})
_ORIGINS: frozenset[str] = frozenset({"tool_result", "fetched", "recalled", "pasted"})


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """One held write: the entry it would add, where its words came from, and when."""

    target: MemoryTarget
    content: str
    origin: Origin
    held_at: str
    kind: Literal["pending_write"] = "pending_write"


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

    def hold(self, target: MemoryTarget, content: str, origin: Origin) -> PendingWrite:
        """Append a held write (blocking: call it in a worker thread)."""
        stamp = datetime.fromtimestamp(self._clock(), tz=UTC).isoformat(timespec="seconds")
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
            if (
                isinstance(raw, dict)
                and raw.get("target") in _TARGETS
                and raw.get("origin") in _ORIGINS
                and isinstance(raw.get("content"), str)
            ):
                held.append(
                    PendingWrite(raw["target"], raw["content"], raw["origin"], str(raw.get("held_at", "")))
                )
        return held

    def take(self, number: int) -> PendingWrite:
        """Remove and return held write `number` (1 = the oldest) (blocking).

        Raises:
            InvalidWriteError: there is no such held write.
        """
        with _disk.locked(self._path, self._lock_timeout_s):
            held = self.list()
            if not 1 <= number <= len(held):
                raise InvalidWriteError(
                    f"there is no held write number {number}; `keel memory pending` lists {len(held)} of them"
                )
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
