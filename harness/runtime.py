"""Process settings for a host that runs many sessions at once (a server embedding keel).

Python's cyclic collector starts a young collection every 700 new container objects and a
full one whenever the objects promoted since the last full collection reach a quarter of
all the long-lived ones. A process holding a thousand sessions has hundreds of thousands
of long-lived objects (each session's parts and transcript), and under that load every turn
stays in flight for a while, so what a turn allocates outlives two young collections and
is promoted: full collections then come every few hundred turns and each scans every
session. Measured with `benchmarks/concurrent_sessions.py` (1,000 sessions, SQLite), the
collector took about a third of the CPU per turn.

`tune_gc_for_sessions` raises the young threshold, so short-lived turn objects die before
anything collects them and full collections become rare. Nothing is freed later than it
would be by reference counting (only cycles wait for a collection); the young generation
holds at most `young` objects more. It changes process-wide state, so the host calls it
once at startup; keel never calls it by itself.
"""

from __future__ import annotations

import gc

__all__ = ["SESSIONS_GC_YOUNG_THRESHOLD", "tune_gc_for_sessions"]

SESSIONS_GC_YOUNG_THRESHOLD = 10_000
"""The young-generation threshold `tune_gc_for_sessions` sets by default (Python's is 700)."""


def tune_gc_for_sessions(young: int = SESSIONS_GC_YOUNG_THRESHOLD) -> tuple[int, int, int]:
    """Raise the collector's young threshold to at least `young` (the older ones unchanged).

    Returns the thresholds it replaced: `gc.set_threshold(*previous)` restores them.

    Raises:
        ValueError: `young` is not positive.
    """
    if young <= 0:
        raise ValueError(f"the young threshold must be positive, not {young!r}")
    previous = gc.get_threshold()
    gc.set_threshold(max(young, previous[0]), previous[1], previous[2])
    return previous
