"""Prune and measure `state.db`: whole lineages go, never one whose lease a live turn holds.

A lineage the rules choose is fenced before it is touched: its lease file
(`<home>/leases/<root>.lock`, the `FileLease` of the home) is locked without waiting, and
held until the deletion commits. A lineage whose lease is held runs a turn right now and is
kept (counted as `kept_live`); one that starts a turn after the check waits for the lease,
finds its rows gone and starts afresh. The freed lease files are removed with their rows.
Record locks belong to a process, so the prune runs in one that holds no lease of the home
(the `keel storage prune` command), never inside a worker serving turns.

Messages, flushes and sessions go in one write transaction; the full-text indexes follow
through their delete triggers. SQLite reuses the freed pages; the file shrinks only on
`VACUUM`. Blocking throughout: call from a worker thread.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from memory._sqlite import LockRetryPolicy, SqliteConnection
from memory.errors import SessionStoreError
from memory.lease import FileLease
from memory.lease.files import try_lock, unlock
from memory.retention._lineage import Lineage, SessionRow, doomed, group_lineages
from memory.retention.policy import Pruned, SessionRetention, StoreStats

__all__ = ["prune_state_db", "state_db_stats"]

_DAY_S = 86_400.0
_RETRY = LockRetryPolicy(busy_timeout_s=10.0)
_BATCH = 500
"""Lineages fenced and removed per transaction (each holds a lease file open)."""


def _rows(conn: sqlite3.Connection) -> list[SessionRow]:
    cur = conn.execute(
        "SELECT id, parent_session_id, user_id, coalesce(last_active_at, started_at), message_count FROM sessions"
    )
    return [SessionRow(str(r[0]), r[1], str(r[2]), float(r[3]), int(r[4])) for r in cur]


def _probe(path: Path, *, create: bool) -> int | None:
    """A descriptor holding `path`'s lock, -1 for a lease file nobody made, None when held."""
    try:
        return try_lock(path, create=create)
    except FileNotFoundError:
        return -1  # a holder would have created it: nobody holds it


@contextlib.contextmanager
def _fenced(
    lineages: Sequence[Lineage], leases: FileLease, *, create: bool
) -> Iterator[tuple[list[Lineage], int]]:
    """The lineages whose lease was free (held until exit), and how many were live.

    A dry run (`create=False`) makes no lease files; a lease file that does not exist is free.
    """
    held: list[tuple[Lineage, int]] = []
    live = 0
    try:
        for lineage in lineages:
            try:
                fd = _probe(leases.path(lineage.root), create=create)
            except (OSError, SessionStoreError):
                fd = None  # a lease that cannot be taken is treated as held
            if fd is None:
                live += 1
            else:
                held.append((lineage, fd))
        yield [lineage for lineage, _ in held], live
    finally:
        for _, fd in held:
            if fd >= 0:
                unlock(fd)


def _mark(conn: sqlite3.Connection, lineages: Sequence[Lineage]) -> None:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS prune_ids (id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.prune_ids")
    conn.executemany(
        "INSERT OR IGNORE INTO temp.prune_ids (id) VALUES (?)",
        ((sid,) for lineage in lineages for sid in lineage.session_ids),
    )


_COUNT = "SELECT count(*) FROM {table} WHERE session_id IN (SELECT id FROM temp.prune_ids)"
_DELETE = "DELETE FROM {table} WHERE {column} IN (SELECT id FROM temp.prune_ids)"


def prune_state_db(
    path: Path,
    rules: SessionRetention,
    *,
    leases_dir: Path,
    dry_run: bool,
    now: float | None = None,
) -> tuple[Pruned, ...]:
    """Remove the lineages `rules` choose from the `state.db` at `path`.

    Args:
        path: the database (nothing happens when it does not exist).
        rules: what to keep.
        leases_dir: the home's lease directory (`<home>/leases`).
        dry_run: count what would go, remove nothing.
        now: the clock reading to age against (default: the wall clock).

    Returns:
        sessions, messages and flushes removed (or that would be), with the live lineages kept.

    Raises:
        SessionStoreError: the database could not be read or written.
    """
    if not rules.active or not path.exists():
        return ()
    now = time.time() if now is None else now
    db = SqliteConnection.connect(path, retry=_RETRY)
    totals = {"sessions": 0, "messages": 0, "flushes": 0, "live": 0}
    try:
        chosen = doomed(group_lineages(db.read(_rows)), rules, now=now)
        leases = FileLease(leases_dir)
        for start in range(0, len(chosen), _BATCH):  # a batch's lease files stay open: bounded
            _prune_batch(db, chosen[start : start + _BATCH], leases, dry_run=dry_run, totals=totals)
    finally:
        db.close()
    return (
        Pruned("sessions", totals["sessions"], kept_live=totals["live"]),
        Pruned("messages", totals["messages"]),
        Pruned("flushes", totals["flushes"]),
    )


def _prune_batch(
    db: SqliteConnection,
    batch: Sequence[Lineage],
    leases: FileLease,
    *,
    dry_run: bool,
    totals: dict[str, int],
) -> None:
    with _fenced(batch, leases, create=not dry_run) as (free, live), db.transaction(write=True) as conn:
        _mark(conn, free)
        for table in ("messages", "flushes"):
            totals[table] += int(conn.execute(_COUNT.format(table=table)).fetchone()[0])
        if not dry_run:
            for table, column in (("flushes", "session_id"), ("messages", "session_id"), ("sessions", "id")):
                conn.execute(_DELETE.format(table=table, column=column))
        conn.execute("DROP TABLE temp.prune_ids")
        totals["sessions"] += sum(len(lineage.session_ids) for lineage in free)
        totals["live"] += live
        if not dry_run:
            for lineage in free:  # gone with its rows; unlinked while still locked
                with contextlib.suppress(OSError):
                    leases.path(lineage.root).unlink()


def state_db_stats(path: Path, *, now: float | None = None) -> tuple[StoreStats, ...]:
    """Rows, bytes and growth of the `state.db` at `path` (nothing when it does not exist)."""
    if not path.exists():
        return ()
    now = time.time() if now is None else now
    size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    db = SqliteConnection.connect(path, retry=_RETRY)
    try:

        def read(conn: sqlite3.Connection) -> list[tuple[int, int, int]]:
            return [
                tuple(conn.execute(sql, (now - _DAY_S, now - 7 * _DAY_S)).fetchone())
                for sql in (
                    "SELECT count(*), count(*) FILTER (WHERE started_at >= ?1), "
                    "count(*) FILTER (WHERE started_at >= ?2) FROM sessions",
                    "SELECT count(*), count(*) FILTER (WHERE timestamp >= ?1), "
                    "count(*) FILTER (WHERE timestamp >= ?2) FROM messages",
                )
            ]

        (sessions, messages) = db.read(read)
    finally:
        db.close()
    return (
        StoreStats("sessions", str(path), sessions[0], None, sessions[1], sessions[2]),
        StoreStats("messages", str(path), messages[0], size, messages[1], messages[2]),
    )
