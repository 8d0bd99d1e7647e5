"""Which KV state a request resumes from: the embedded server's prefix-cache policy.

The model holds one live KV state (the tokens of the last request and its reply). Besides
it the server keeps a few saved states in RAM (`RamStates`, bounded by count and bytes,
least recently used out first) and, optionally, long stable prefixes on disk (`_disk`).
`plan_resume` decides, for a request's tokens:

1. Candidates are only states of the request's own *scope* (the request's `user` field,
   empty by default): a request never resumes from — and so `cached_tokens` and its timing
   never reveal — a prefix evaluated for another scope.
2. It resumes from the candidate sharing the longest token prefix with the request: the
   live state, unless a RAM state beats it by at least `min_gain` tokens (loading costs a
   copy), unless a disk state beats both by at least `disk_min_gain` (loading costs a read).
3. Before the live state is overwritten past `min_save` tokens (a side call with another
   prompt, or a switch to a saved state), it is saved to RAM — unless a saved state already
   holds it or extends it. Saving a state drops saved states it extends (they can never
   win again).

The policy is pure (token sequences and byte sizes): the cache meter's simulator of keel's
server runs the same code, so its predictions are the server's counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

__all__ = ["Plan", "PrefixPolicy", "RamStates", "Saved", "common_prefix", "plan_resume"]

P = TypeVar("P")
Q = TypeVar("Q")


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class PrefixPolicy:
    """The knobs of `plan_resume` and `RamStates` (see the module docstring)."""

    ram_states: int = 4
    """Saved states kept in RAM besides the live one (0: the live state only)."""
    ram_bytes: int = 1024 * 1024 * 1024
    min_save: int = 64
    min_gain: int = 32
    disk_min_gain: int = 64


@dataclass(slots=True)
class Saved(Generic[P]):
    """A saved KV state: the tokens it holds, whose it is, its size, and where it is."""

    tokens: tuple[int, ...]
    scope: str
    nbytes: int
    payload: P
    used: int = 0


@dataclass(slots=True)
class RamStates(Generic[P]):
    """Saved states in RAM, bounded by count and bytes; least recently used out first."""

    policy: PrefixPolicy
    entries: list[Saved[P]] = field(default_factory=list)
    _clock: int = 0

    def best(self, tokens: Sequence[int], scope: str) -> tuple[Saved[P] | None, int]:
        """The state of `scope` sharing the longest prefix with `tokens` (ties: the most recent)."""
        found: Saved[P] | None = None
        length = 0
        for e in sorted(self.entries, key=lambda e: -e.used):
            if e.scope != scope:
                continue
            n = common_prefix(e.tokens, tokens)
            if n > length:
                found, length = e, n
        return found, length

    def holds(self, tokens: Sequence[int], scope: str) -> bool:
        """Whether a saved state of `scope` holds `tokens` (or extends them)."""
        n = len(tokens)
        return any(
            e.scope == scope and len(e.tokens) >= n and common_prefix(e.tokens, tokens) == n
            for e in self.entries
        )

    def touch(self, entry: Saved[P]) -> None:
        self._clock += 1
        entry.used = self._clock

    def add(self, entry: Saved[P]) -> list[Saved[P]]:
        """Keep `entry`; returns the states dropped (extended by it, or evicted for room)."""
        if self.policy.ram_states < 1 or entry.nbytes > self.policy.ram_bytes:
            return [entry]
        n = len(entry.tokens)
        dropped = [
            e
            for e in self.entries
            if e.scope == entry.scope and common_prefix(e.tokens, entry.tokens) == len(e.tokens) <= n
        ]
        self.entries = [e for e in self.entries if all(e is not d for d in dropped)]
        self.touch(entry)
        self.entries.append(entry)
        while (
            len(self.entries) > self.policy.ram_states
            or sum(e.nbytes for e in self.entries) > self.policy.ram_bytes
        ):
            oldest = min(self.entries, key=lambda e: e.used)
            self.entries.remove(oldest)
            dropped.append(oldest)
        return dropped


Source = Literal["live", "ram", "disk"]


@dataclass(frozen=True, slots=True)
class Plan(Generic[P, Q]):
    """What to do before evaluating a request."""

    source: Source
    shared: int
    """Prompt tokens the chosen state already holds (before the last-token rule)."""
    ram_entry: Saved[P] | None
    """The RAM state to load (when `source` is `ram`)."""
    disk_entry: Saved[Q] | None
    """The disk state to load (when `source` is `disk`)."""
    save_live: bool
    """Save the live state to RAM first: the request would overwrite it."""
    reset: bool
    """The live state belongs to another scope: clear it rather than reuse any of it."""


def plan_resume(
    policy: PrefixPolicy,
    *,
    live: Sequence[int],
    live_scope: str,
    tokens: Sequence[int],
    scope: str,
    ram: RamStates[P],
    disk: tuple[Saved[Q] | None, int],
) -> Plan[P, Q]:
    """Choose the state a request resumes from (see the module docstring)."""
    same = live_scope == scope
    live_shared = common_prefix(live, tokens) if same else 0
    source: Source = "live"
    shared = live_shared
    ram_entry, ram_shared = ram.best(tokens, scope)
    if ram_entry is not None and ram_shared >= live_shared + max(policy.min_gain, 1):
        source, shared = "ram", ram_shared
    disk_entry, disk_shared = disk
    if (
        disk_entry is not None
        and disk_entry.scope == scope
        and disk_shared >= shared + max(policy.disk_min_gain, 1)
    ):
        source, shared = "disk", disk_shared
    kept = live_shared if source == "live" else 0
    save = policy.ram_states > 0 and len(live) - kept >= policy.min_save and not ram.holds(live, live_scope)
    return Plan(
        source,
        shared,
        ram_entry if source == "ram" else None,
        disk_entry if source == "disk" else None,
        save,
        reset=not same and source == "live",
    )
