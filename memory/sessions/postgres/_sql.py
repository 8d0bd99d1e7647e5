"""Reads and writes on the PostgreSQL session store; `PgSessionStore` runs each in a transaction.

The PostgreSQL twins of SQLite's queries, returning the same records. Appending locks the
session row (`FOR UPDATE`), so concurrent appends to one session get consecutive `seq`
numbers. A small batch is one statement (lock, insert in order, move the counters: one
round trip); a large one draws its ids from the identity sequence and streams the rows
by `COPY`. Ids increase within a batch; across concurrent transactions they follow the
order they were drawn in, not commit order.

PostgreSQL text cannot hold NUL characters: `pg_text` turns them into U+FFFD, on writes
and on id lookups alike, so nothing is refused and ids still match.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
import psycopg.errors
from psycopg.rows import TupleRow

from memory.errors import SessionConflictError, SessionFencedError, SessionNotFoundError
from memory.sessions import _rows, writes
from memory.sessions._records import (
    AnchoredView,
    EndReason,
    FlushRecord,
    MessageRecord,
    SessionRecord,
    StoredMessage,
    StoredUsage,
)
from memory.sessions.reads import ListSessions, SelectMessages

__all__ = [
    "COPY_THRESHOLD",
    "Conn",
    "add_usage",
    "anchored_views",
    "append_messages",
    "apply",
    "check_fence",
    "continuation",
    "create_session",
    "end_session",
    "get_message",
    "get_messages",
    "get_session",
    "lineage_roots",
    "list_flushes",
    "list_sessions",
    "pg_text",
    "record_flush",
    "server_identity",
]

Conn = psycopg.AsyncConnection[TupleRow]

COPY_THRESHOLD = 32
"""Batches of at least this many messages are written with `COPY` (bulk imports, benchmarks)."""

_COPY_COLUMNS = f"id, {_rows.MESSAGE_INSERT_COLUMNS}"


def pg_text(value: str) -> str:
    """`value` storable in PostgreSQL text: NUL characters become U+FFFD."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


async def apply(conn: Conn, write: writes.SessionWrite) -> writes.WriteResult:
    """Run one write value in the caller's transaction (its arguments were checked when it was made)."""
    sid = pg_text(write.session_id)
    match write:
        case writes.CreateSession():
            await create_session(conn, write)
            return None
        case writes.AppendMessages():
            ids = await append_messages(conn, sid, write.messages)
            if write.usage is not None:
                await add_usage(conn, sid, write.usage)
            return ids
        case writes.EndSession():
            return await end_session(conn, sid, reason=write.reason, ended_at=write.ended_at)
        case writes.AddUsage():
            await add_usage(conn, sid, write.counts)
            return None
        case writes.RecordFlush():
            return await record_flush(conn, write)


async def check_fence(conn: Conn, fence: writes.Fence) -> None:
    """Refuse the transaction's write when another holder took the lineage's lease after
    `fence` was taken (the row is share-locked until commit, so a worker taking the lease
    meanwhile waits for this write to land first)."""
    cur = await conn.execute(
        "SELECT token, holder, held_from FROM session_fences WHERE lineage = %s FOR SHARE", (fence.lineage,)
    )
    row = await cur.fetchone()
    if row is None or str(row[1]) != fence.holder or int(row[2]) > fence.token:
        newest = None if row is None else int(row[0])
        raise SessionFencedError(
            f"this worker lost the lease of session {fence.lineage!r} (its token {fence.token}; token "
            f"{newest} is another worker's): the session went on elsewhere, so this write was refused and "
            "the turn stops writing. Resume the session to see what the other worker stored."
        )


async def server_identity(conn: Conn) -> str:
    """`postgresql system <id> database <name>`: the cluster's system identifier (the same
    through every address and port that reaches it) and the database."""
    try:
        async with conn.transaction():  # a savepoint: a refusal leaves the connection usable
            cur = await conn.execute(
                "SELECT system_identifier::text, current_database() FROM pg_control_system()"
            )
            row = await cur.fetchone()
    except psycopg.errors.InsufficientPrivilege:  # a role without it: the server's own address
        cur = await conn.execute(
            "SELECT coalesce(host(inet_server_addr()), 'socket') || ':' || "
            "coalesce(inet_server_port(), 0)::text, current_database()"
        )
        row = await cur.fetchone()
    assert row is not None
    return f"postgresql system {row[0]} database {row[1]}"


async def _lock_session(conn: Conn, session_id: str) -> tuple[int, float]:
    cur = await conn.execute(
        "SELECT message_count, last_active_at FROM sessions WHERE id = %s FOR UPDATE", (session_id,)
    )
    row = await cur.fetchone()
    if row is None:
        raise SessionNotFoundError(f"session {session_id!r} does not exist; create it first")
    return int(row[0]), float(row[1])


async def _exists(conn: Conn, session_id: str) -> bool:
    cur = await conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,))
    return await cur.fetchone() is not None


async def create_session(conn: Conn, write: writes.CreateSession) -> None:
    values = _rows.session_values(write, ident=pg_text, text=pg_text)
    session_id, parent = values[0], values[3]
    if parent is not None and not await _exists(conn, str(parent)):
        raise SessionNotFoundError(f"session {parent!r} does not exist; create it first")
    try:
        cur = await conn.execute(
            f"INSERT INTO sessions ({_rows.SESSION_INSERT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            values,
        )
    except psycopg.errors.ForeignKeyViolation as exc:  # the parent vanished meanwhile
        raise SessionNotFoundError(f"session {parent!r} does not exist; create it first") from exc
    if await cur.fetchone() is None:
        raise SessionConflictError(f"session {session_id!r} already exists; pick a new id")


async def end_session(conn: Conn, session_id: str, *, reason: EndReason, ended_at: float) -> bool:
    cur = await conn.execute(
        "UPDATE sessions SET ended_at = %s, end_reason = %s WHERE id = %s AND ended_at IS NULL",
        (ended_at, reason, session_id),
    )
    if cur.rowcount == 1:
        return True
    if not await _exists(conn, session_id):
        raise SessionNotFoundError(f"session {session_id!r} does not exist; create it first")
    return False


def _row(mid: int, session_id: str, seq: int, m: StoredMessage) -> tuple[object, ...]:
    return (mid, *_rows.message_values(session_id, seq, m, text=pg_text))


async def append_messages(conn: Conn, session_id: str, messages: Sequence[StoredMessage]) -> list[int]:
    if len(messages) < COPY_THRESHOLD:
        return await _append_small(conn, session_id, messages)
    count, last_active = await _lock_session(conn, session_id)
    cur = await conn.execute(
        "SELECT nextval(pg_get_serial_sequence('messages', 'id')) FROM generate_series(1, %s)",
        (len(messages),),
    )
    ids = sorted(int(r[0]) for r in await cur.fetchall())
    async with conn.cursor().copy(f"COPY messages ({_COPY_COLUMNS}) FROM STDIN") as copy:
        for i, (mid, m) in enumerate(zip(ids, messages, strict=True)):
            await copy.write_row(_row(mid, session_id, count + i, m))
    last_active = max([last_active, *(m.timestamp for m in messages)])
    await conn.execute(
        "UPDATE sessions SET message_count = %s, last_active_at = %s WHERE id = %s",
        (count + len(messages), last_active, session_id),
    )
    return ids


async def _append_small(conn: Conn, session_id: str, messages: Sequence[StoredMessage]) -> list[int]:
    """Lock the session, insert the rows and move its counters in one statement (one round trip)."""
    if not messages:
        await _lock_session(conn, session_id)
        return []
    columns = list(zip(*(_row(0, session_id, 0, m)[3:] for m in messages), strict=True))
    cur = await conn.execute(
        "WITH s AS (SELECT message_count FROM sessions WHERE id = %s FOR UPDATE), "
        "ins AS (INSERT INTO messages (session_id, seq, role, content, api_content, tool_calls, "
        "tool_call_id, tool_name, timestamp, token_count, summary) "
        "SELECT %s, s.message_count + u.i - 1, u.role, u.content, u.api_content, u.tool_calls, "
        "u.tool_call_id, u.tool_name, u.ts, u.token_count, u.summary FROM s, "
        "unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
        "%s::float8[], %s::int[], %s::bool[]) WITH ORDINALITY "
        "u(role, content, api_content, tool_calls, tool_call_id, tool_name, ts, token_count, summary, i) "
        "ORDER BY u.i RETURNING id, seq), "
        "upd AS (UPDATE sessions SET message_count = message_count + %s, "
        "last_active_at = greatest(last_active_at, %s) WHERE id = %s AND EXISTS (SELECT 1 FROM s)) "
        "SELECT id FROM ins ORDER BY seq",
        (
            session_id,
            session_id,
            *(list(c) for c in columns),
            len(messages),
            max(m.timestamp for m in messages),
            session_id,
        ),
    )
    ids = [int(r[0]) for r in await cur.fetchall()]
    if not ids:
        raise SessionNotFoundError(f"session {session_id!r} does not exist; create it first")
    return ids


async def add_usage(conn: Conn, session_id: str, usage: StoredUsage) -> None:
    cur = await conn.execute(
        f"UPDATE sessions SET {_rows.counters_added('%s')} WHERE id = %s",
        (*_rows.usage_values(usage), session_id),
    )
    if cur.rowcount != 1:
        raise SessionNotFoundError(f"session {session_id!r} does not exist; create it first")


async def record_flush(conn: Conn, write: writes.RecordFlush) -> int:
    values = _rows.flush_values(write, ident=pg_text, text=pg_text)
    if not await _exists(conn, str(values[0])):
        raise SessionNotFoundError(f"session {values[0]!r} does not exist; create it first")
    cur = await conn.execute(
        f"INSERT INTO flushes ({_rows.FLUSH_INSERT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
        values,
    )
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def list_flushes(conn: Conn, session_id: str) -> list[FlushRecord]:
    cur = await conn.execute(
        "SELECT id, session_id, timestamp, mode, saved, refused, reply FROM flushes "
        "WHERE session_id = %s ORDER BY id",
        (session_id,),
    )
    return [_rows.flush_from_row(r) for r in await cur.fetchall()]


async def get_session(conn: Conn, session_id: str) -> SessionRecord | None:
    cur = await conn.execute(f"SELECT {_rows.SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,))
    row = await cur.fetchone()
    return None if row is None else _rows.session_from_row(row)


async def continuation(conn: Conn, session_id: str) -> str | None:
    cur = await conn.execute(
        "SELECT id FROM sessions WHERE parent_session_id = %s ORDER BY started_at DESC, row_id DESC LIMIT 1",
        (session_id,),
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def list_sessions(conn: Conn, query: ListSessions) -> list[SessionRecord]:
    column = "last_active_at" if query.order == "last_active" else "started_at"
    tests = ["NOT (id = ANY(%s))"]
    args: list[object] = [[pg_text(e) for e in query.exclude]]
    if query.user_ids is not None:
        tests.append("user_id = ANY(%s)")
        args.append([pg_text(u) for u in query.user_ids])
    cur = await conn.execute(
        f"SELECT {_rows.SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(tests)} "
        f"ORDER BY {column} DESC, row_id DESC LIMIT %s OFFSET %s",
        (*args, query.limit, query.offset),
    )
    return [_rows.session_from_row(r) for r in await cur.fetchall()]


async def get_messages(conn: Conn, query: SelectMessages) -> list[MessageRecord]:
    roles = query.roles
    role_sql = "" if roles is None else " AND role = ANY(%s)"
    role_args: tuple[object, ...] = () if roles is None else (list(roles),)
    direction = "DESC" if query.from_end else "ASC"
    cur = await conn.execute(
        f"SELECT {_rows.MESSAGE_COLUMNS} FROM messages WHERE session_id = %s AND seq >= %s{role_sql} "
        f"ORDER BY seq {direction} LIMIT %s",
        (pg_text(query.session_id), query.start_seq, *role_args, query.limit),
    )
    records = [_rows.message_from_row(r) for r in await cur.fetchall()]
    return records[::-1] if query.from_end else records


async def get_message(conn: Conn, message_id: int) -> MessageRecord | None:
    if not -(2**63) <= message_id < 2**63:
        return None  # no bigint id can match; PostgreSQL would refuse the parameter
    cur = await conn.execute(f"SELECT {_rows.MESSAGE_COLUMNS} FROM messages WHERE id = %s", (message_id,))
    row = await cur.fetchone()
    return None if row is None else _rows.message_from_row(row)


_VISIBLE_M = "m.role IN ('user', 'assistant') AND m.content <> ''"
_SAME = "m.session_id = a.session_id AND " + _VISIBLE_M
_MESSAGE_COLUMNS_M = ", ".join(f"m.{c.strip()}" for c in _rows.MESSAGE_COLUMNS.split(","))

# One statement per view: the anchor, its window and the bookends as tagged positions,
# then their rows. Mirrors SQLite's `anchored_view`, which asks for each part separately.
_VIEW_SQL = (
    "WITH a AS (SELECT session_id, seq FROM messages WHERE id = %(id)s), "
    f"b AS (SELECT m.seq FROM messages m, a WHERE {_SAME} AND m.seq < a.seq ORDER BY m.seq DESC LIMIT %(w)s), "
    f"f AS (SELECT m.seq FROM messages m, a WHERE {_SAME} AND m.seq > a.seq ORDER BY m.seq LIMIT %(w)s), "
    "lim AS (SELECT COALESCE((SELECT min(seq) FROM b), a.seq) AS low, "
    "COALESCE((SELECT max(seq) FROM f), a.seq) AS high FROM a), "
    f"bs AS (SELECT m.seq FROM messages m, a, lim WHERE {_SAME} AND NOT m.summary AND m.seq < lim.low "
    "ORDER BY m.seq LIMIT %(k)s), "
    f"be AS (SELECT m.seq FROM messages m, a, lim WHERE {_SAME} AND NOT m.summary AND m.seq > lim.high "
    "ORDER BY m.seq DESC LIMIT %(k)s), "
    "t AS (SELECT 'a' AS tag, seq FROM a UNION ALL SELECT 'b', seq FROM b UNION ALL SELECT 'f', seq FROM f "
    "UNION ALL SELECT 's', seq FROM bs UNION ALL SELECT 'e', seq FROM be) "
    f"SELECT t.tag, {_MESSAGE_COLUMNS_M} FROM t, a, messages m "
    "WHERE m.session_id = a.session_id AND m.seq = t.seq ORDER BY m.seq"
)
_VIEW_SESSION_SQL = (
    f"SELECT {_rows.SESSION_COLUMNS} FROM sessions WHERE id = (SELECT session_id FROM messages WHERE id = %s)"
)


def _view(rows: list[TupleRow], session: SessionRecord | None) -> AnchoredView | None:
    groups: dict[str, list[MessageRecord]] = {tag: [] for tag in "abfse"}
    for row in rows:
        groups[str(row[0])].append(_rows.message_from_row(row[1:]))
    if not groups["a"] or session is None:
        return None  # no such message (or, hand-edited, no session for it)
    anchor = groups["a"][0]
    low = groups["b"][0].seq if groups["b"] else anchor.seq
    high = groups["f"][-1].seq if groups["f"] else anchor.seq
    return AnchoredView(
        session=session,
        anchor=anchor,
        before=tuple(groups["b"]),
        after=tuple(groups["f"]),
        bookend_start=tuple(groups["s"]),
        bookend_end=tuple(groups["e"]),
        messages_before=low,
        messages_after=max(0, session.message_count - high - 1),
    )


async def anchored_views(
    conn: Conn, message_ids: Sequence[int], *, window: int, bookend: int
) -> list[AnchoredView | None]:
    """Every view in one pipelined round trip (two statements per message)."""
    valid = [i for i in message_ids if -(2**63) <= i < 2**63]
    pending = []
    async with conn.pipeline():
        for mid in valid:
            view_cur, session_cur = conn.cursor(), conn.cursor()
            await view_cur.execute(_VIEW_SQL, {"id": mid, "w": max(0, window), "k": max(0, bookend)})
            await session_cur.execute(_VIEW_SESSION_SQL, (mid,))
            pending.append((mid, view_cur, session_cur))
    found: dict[int, AnchoredView | None] = {}
    for mid, view_cur, session_cur in pending:
        session_row = await session_cur.fetchone()
        session = None if session_row is None else _rows.session_from_row(session_row)
        found[mid] = _view(await view_cur.fetchall(), session)
    return [found.get(i) for i in message_ids]


async def lineage_roots(conn: Conn, session_ids: Sequence[str]) -> dict[str, str]:
    """Each id's lineage root: parents fetched a generation at a time, as on SQLite."""
    parents: dict[str, str | None] = {}
    frontier = sorted(set(session_ids))
    for _ in range(_rows.MAX_LINEAGE_DEPTH):
        if not frontier:
            break
        cur = await conn.execute("SELECT id, parent_session_id FROM sessions WHERE id = ANY(%s)", (frontier,))
        fetched = {str(r[0]): None if r[1] is None else str(r[1]) for r in await cur.fetchall()}
        for sid in frontier:
            parents[sid] = fetched.get(sid)
        frontier = sorted({p for p in fetched.values() if p is not None and p not in parents})
    return _rows.roots_from_parents(session_ids, parents)
