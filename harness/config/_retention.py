"""`retention:` — how long each store keeps what it holds, and how big it may grow.

Every limit is off (null) by default: keel removes nothing the user did not ask it to.
`keel storage prune` applies them (`--dry-run` first to see what would go).
"""

from __future__ import annotations

from pydantic import Field

from harness.config._section import Section

__all__ = ["RetentionConfig"]


class RetentionConfig(Section):
    sessions_max_age_days: float | None = Field(None, gt=0)
    """A lineage (a session and its compressions' continuations) idle this long goes whole."""
    messages_max_per_user: int | None = Field(None, ge=1)
    """A user's oldest lineages go until the rest hold at most this many messages."""
    traces_max_age_days: float | None = Field(None, gt=0)
    traces_max_mb_per_user: float | None = Field(None, gt=0)
    journals_max_age_days: float | None = Field(None, gt=0)
    """Journals hold writes never stored: only abandoned ones older than this go."""
    archives_max_age_days: float | None = Field(None, gt=0)
    """Entries evicted from MEMORY.md / USER.md (ARCHIVE.jsonl, curated_archive) older than this."""
    run_events_max_age_days: float | None = Field(None, gt=0)
    """Events of `keel serve` runs ended longer ago; None: `serve.events_retention`."""
