"""What a prune keeps and what it reports: the retention rules as plain values, and the result.

The rules come from the `retention:` config section (the CLI turns days and megabytes into
seconds and bytes); `memory` never reads config itself.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FileRetention", "PruneReport", "Pruned", "SessionRetention", "StoreStats"]


@dataclass(frozen=True, slots=True)
class SessionRetention:
    """How long sessions are kept, and how many messages a user may keep.

    The unit is a lineage (a session and the ones that continued it after compressions):
    it goes whole or not at all, so a kept session never loses its parent and its lease
    key (the lineage's first session) never changes under a live turn.

    Attributes:
        max_age_s: a lineage last active longer ago than this goes; None keeps every age.
        max_messages_per_user: a user's oldest lineages go until the rest hold at most this
            many messages (the newest lineage always stays); None sets no cap.
    """

    max_age_s: float | None = None
    max_messages_per_user: int | None = None

    @property
    def active(self) -> bool:
        return self.max_age_s is not None or self.max_messages_per_user is not None


@dataclass(frozen=True, slots=True)
class FileRetention:
    """How long files of one kind are kept, and how many bytes each directory may hold.

    Attributes:
        max_age_s: a file not modified for longer than this goes; None keeps every age.
        max_bytes: a directory's oldest files go until the rest fit; None sets no cap.
    """

    max_age_s: float | None = None
    max_bytes: int | None = None

    @property
    def active(self) -> bool:
        return self.max_age_s is not None or self.max_bytes is not None


@dataclass(frozen=True, slots=True)
class Pruned:
    """What one part of a prune removed (or, on a dry run, would remove)."""

    what: str
    count: int
    bytes: int | None = None
    kept_live: int = 0
    """Items the rules chose but kept because a live session holds them (its lease)."""


@dataclass(frozen=True, slots=True)
class PruneReport:
    """Every part of one prune, in the order they ran."""

    dry_run: bool
    parts: tuple[Pruned, ...]

    def count(self, what: str) -> int:
        return sum(p.count for p in self.parts if p.what == what)


@dataclass(frozen=True, slots=True)
class StoreStats:
    """One store's size and growth.

    Attributes:
        what: the store (`sessions`, `messages`, `traces`, ...).
        where: its path, or its table and schema.
        count: rows or files.
        bytes: its size on disk (None when the backend cannot say).
        added_1d: rows or files added in the last day.
        added_7d: rows or files added in the last 7 days.
    """

    what: str
    where: str
    count: int
    bytes: int | None
    added_1d: int
    added_7d: int
