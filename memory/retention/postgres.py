"""Prune and measure a PostgreSQL keel schema: the same rules and fence as `state.db`.

The fence is the session lease itself: each chosen lineage's advisory lock
(`memory.lease.lease_key`, the key `PgLease` takes) is tried without waiting on the prune's
own connection and held until its rows are deleted and committed. A lineage whose lock is
held runs a turn on some worker right now and is kept.

Evicted curated entries (`curated_archive`) are append-only by a trigger; the prune is
the one deliberate exception: it disables that trigger for its own transaction only
(`ALTER TABLE` takes the table's lock, so no archive write interleaves) and deletes entries
evicted before the cutoff. `curated_versions` is never pruned: every session's
`memory_snapshot` pins versions there, and a resumed session reads them back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from memory.errors import SessionStoreError, SessionStoreUnavailableError
from memory.lease import lease_key
from memory.retention._lineage import Lineage, SessionRow, doomed, group_lineages
from memory.retention.policy import Pruned, SessionRetention, StoreStats
from memory.sessions.postgres import PgTarget

__all__ = ["pg_has_table", "pg_stats", "prune_archive_rows", "prune_pg_sessions"]

Conn = psycopg.AsyncConnection[TupleRow]
_DAY_S = 86_400.0
_BATCH = 2_000


async def _connect(target: PgTarget) -> Conn:
    try:
        return await psycopg.AsyncConnection.connect(
            target.url, options=f"-c search_path={target.schema}", connect_timeout=10
        )
    except psycopg.Error as exc:
        raise SessionStoreUnavailableError(
            f"cannot reach the PostgreSQL server {target.shown} ({exc}); check that it runs (storage.url)"
        ) from exc


async def _has_table(conn: Conn, target: PgTarget, table: str) -> bool:
    cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{target.schema}.{table}",))
    row = await cur.fetchone()
    return bool(row and row[0])


async def pg_has_table(target: PgTarget, table: str) -> bool:
    """Whether `table` exists in the schema `target` names (without creating anything)."""
    conn = await _connect(target)
    try:
        return await _has_table(conn, target, table)
    except psycopg.Error as exc:
        raise SessionStoreError(f"reading the tables of {target.shown} failed: {exc}") from exc
    finally:
        await conn.close()


async def _fenced(conn: Conn, schema: str, batch: Sequence[Lineage]) -> tuple[list[Lineage], list[int], int]:
    keys = [lease_key(schema, lineage.root) for lineage in batch]
    cur = await conn.execute("SELECT k, pg_try_advisory_lock(k) FROM unnest(%s::bigint[]) AS k", (keys,))
    got = {int(k) for k, ok in await cur.fetchall() if ok}
    free = [lineage for lineage, key in zip(batch, keys, strict=True) if key in got]
    return free, sorted(got), len(batch) - len(free)


async def prune_pg_sessions(
    target: PgTarget, rules: SessionRetention, *, dry_run: bool, now: float | None = None
) -> tuple[Pruned, ...]:
    """Remove the lineages `rules` choose from the schema `target` names.

    Returns:
        sessions, messages and flushes removed (or, on a dry run, that would be).

    Raises:
        SessionStoreError: the server refused or could not be reached.
    """
    if not rules.active:
        return ()
    now = time.time() if now is None else now
    totals = {"sessions": 0, "messages": 0, "flushes": 0, "live": 0}
    conn = await _connect(target)
    try:
        await conn.set_autocommit(True)
        if not await _has_table(conn, target, "sessions"):
            return ()
        cur = await conn.execute(
            "SELECT id, parent_session_id, user_id, coalesce(last_active_at, started_at), message_count FROM sessions"
        )
        rows = [SessionRow(str(r[0]), r[1], str(r[2]), float(r[3]), int(r[4])) for r in await cur.fetchall()]
        chosen = doomed(group_lineages(rows), rules, now=now)
        fences = await _has_table(conn, target, "session_fences")
        for start in range(0, len(chosen), _BATCH):
            await _prune_batch(
                conn,
                target.schema,
                chosen[start : start + _BATCH],
                dry_run=dry_run,
                totals=totals,
                fences=fences,
            )
    except psycopg.Error as exc:
        raise SessionStoreError(
            f"pruning {target.shown} failed, nothing of that batch was removed: {exc}"
        ) from exc
    finally:
        await conn.close()
    return (
        Pruned("sessions", totals["sessions"], kept_live=totals["live"]),
        Pruned("messages", totals["messages"]),
        Pruned("flushes", totals["flushes"]),
    )


async def _prune_batch(
    conn: Conn,
    schema: str,
    batch: Sequence[Lineage],
    *,
    dry_run: bool,
    totals: dict[str, int],
    fences: bool,
) -> None:
    free, keys, live = await _fenced(conn, schema, batch)
    try:
        ids = [sid for lineage in free for sid in lineage.session_ids]
        async with conn.transaction():
            for table in ("messages", "flushes"):
                query = sql.SQL("SELECT count(*) FROM {} WHERE session_id = ANY(%s)").format(
                    sql.Identifier(table)
                )
                row = await (await conn.execute(query, (ids,))).fetchone()
                totals[table] += int(row[0]) if row else 0
            if not dry_run:
                for table, column in (
                    ("flushes", "session_id"),
                    ("messages", "session_id"),
                    ("sessions", "id"),
                ):
                    query = sql.SQL("DELETE FROM {} WHERE {} = ANY(%s)").format(
                        sql.Identifier(table), sql.Identifier(column)
                    )
                    await conn.execute(query, (ids,))
                if fences:  # a pruned lineage's lease token: held by nobody (its lock is ours)
                    roots = [lineage.root for lineage in free]
                    await conn.execute("DELETE FROM session_fences WHERE lineage = ANY(%s)", (roots,))
        totals["sessions"] += len(ids)
        totals["live"] += live
    finally:
        await conn.execute("SELECT pg_advisory_unlock(k) FROM unnest(%s::bigint[]) AS k", (keys,))


async def prune_archive_rows(
    target: PgTarget, *, max_age_s: float | None, dry_run: bool, now: float | None = None
) -> tuple[Pruned, ...]:
    """Remove `curated_archive` entries evicted more than `max_age_s` ago (see the module doc)."""
    if max_age_s is None:
        return ()
    now = time.time() if now is None else now
    cutoff = datetime.fromtimestamp(now - max_age_s, tz=UTC).isoformat(timespec="seconds")
    conn = await _connect(target)
    try:
        await conn.set_autocommit(True)
        if not await _has_table(conn, target, "curated_archive"):
            return ()
        async with conn.transaction():
            row = await (
                await conn.execute("SELECT count(*) FROM curated_archive WHERE evicted_at < %s", (cutoff,))
            ).fetchone()
            count = int(row[0]) if row else 0
            if count and not dry_run:
                await conn.execute("ALTER TABLE curated_archive DISABLE TRIGGER curated_archive_append_only")
                await conn.execute("DELETE FROM curated_archive WHERE evicted_at < %s", (cutoff,))
                await conn.execute("ALTER TABLE curated_archive ENABLE TRIGGER curated_archive_append_only")
    except psycopg.Error as exc:
        raise SessionStoreError(
            f"pruning the archive in {target.shown} failed, nothing was removed: {exc}"
        ) from exc
    finally:
        await conn.close()
    return (Pruned("archived entries", count),)


_STATS = (
    ("sessions", "started_at"),
    ("messages", "timestamp"),
    ("flushes", "timestamp"),
)


async def pg_stats(target: PgTarget, *, now: float | None = None) -> tuple[StoreStats, ...]:
    """Rows, bytes (with indexes and TOAST) and growth of the session tables in `target`."""
    now = time.time() if now is None else now
    out: list[StoreStats] = []
    conn = await _connect(target)
    try:
        await conn.set_autocommit(True)
        for table, column in _STATS:
            if not await _has_table(conn, target, table):
                continue
            query = sql.SQL(
                "SELECT count(*), count(*) FILTER (WHERE {c} >= %s), count(*) FILTER (WHERE {c} >= %s), "
                "pg_total_relation_size(%s::regclass) FROM {t}"
            ).format(c=sql.Identifier(column), t=sql.Identifier(table))
            cur = await conn.execute(query, (now - _DAY_S, now - 7 * _DAY_S, f"{target.schema}.{table}"))
            row = await cur.fetchone()
            if row is not None:
                where = f"{target.shown}, table {table}"
                out.append(StoreStats(table, where, int(row[0]), int(row[3]), int(row[1]), int(row[2])))
    except psycopg.Error as exc:
        raise SessionStoreError(f"reading the sizes of {target.shown} failed: {exc}") from exc
    finally:
        await conn.close()
    return tuple(out)
