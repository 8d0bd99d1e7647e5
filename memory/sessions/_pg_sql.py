"""Reads and writes on the PostgreSQL session store; `PgSessionStore` runs each in a transaction.

The PostgreSQL twins of `_sql.py`, returning the same records. Appending locks the
session row (`FOR UPDATE`), so concurrent appends to one session get consecutive `seq`
numbers; message ids are taken from the identity sequence in one call and written with
the rows (by `COPY` for large batches), so ids increase within a batch. Across
concurrent transactions ids follow the order ids were drawn, not commit order.

PostgreSQL text cannot hold NUL characters: `pg_text` turns them into U+FFFD, on writes
and on id lookups alike, so nothing is refused and ids still match.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import psycopg
import psycopg.errors
from psycopg.rows import TupleRow
from pydantic import JsonValue, TypeAdapter, ValidationError

from memory.errors import SessionConflictError, SessionNotFoundError, SessionStoreCorruptError
from memory.sessions._records import (
    EndReason,
    FlushMode,
    FlushRecord,
    MessageRecord,
    SessionRecord,
    StoredMessage,
    StoredRole,
)
from memory.sessions._sql import (
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    VISIBLE,
    AnchoredView,
    json_safe,
    message_from_row,
    roots_from_parents,
    session_from_row,
)

__all__ = [
    "COPY_THRESHOLD",
    "Conn",
    "add_usage",
    "anchored_view",
    "append_messages",
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
]

Conn = psycopg.AsyncConnection[TupleRow]

COPY_THRESHOLD = 32
"""Batches of at least this many messages are written with `COPY` (bulk imports, benchmarks)."""

_JSON = TypeAdapter(JsonValue)
_INSERT_COLUMNS = (
    "id, session_id, seq, role, content, api_content, tool_calls, tool_call_id, tool_name, "
    "timestamp, token_count, summary"
)


def pg_text(value: str) -> str:
    """`value` storable in PostgreSQL text: NUL characters become U+FFFD."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def _opt(value: str | None) -> str | None:
    return None if value is None else pg_text(value)


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


async def create_session(
    conn: Conn,
    session_id: str,
    *,
    source: str,
    model: str | None,
    parent_session_id: str | None,
    title: str | None,
    started_at: float,
    user_id: str,
) -> None:
    if parent_session_id is not None and not await _exists(conn, parent_session_id):
        raise SessionNotFoundError(f"session {parent_session_id!r} does not exist; create it first")
    try:
        cur = await conn.execute(
            "INSERT INTO sessions (id, source, model, parent_session_id, started_at, title, last_active_at, "
            "user_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
            (session_id, source, model, parent_session_id, started_at, title, started_at, user_id),
        )
    except psycopg.errors.ForeignKeyViolation as exc:  # the parent vanished meanwhile
        raise SessionNotFoundError(f"session {parent_session_id!r} does not exist; create it first") from exc
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
    return (
        mid,
        session_id,
        seq,
        m.role,
        pg_text(m.content),
        _opt(m.api_content),
        _opt(m.tool_calls),
        _opt(m.tool_call_id),
        _opt(m.tool_name),
        m.timestamp,
        m.token_count,
        m.summary,
    )


async def append_messages(conn: Conn, session_id: str, messages: Sequence[StoredMessage]) -> list[int]:
    if len(messages) < COPY_THRESHOLD:
        return await _append_small(conn, session_id, messages)
    count, last_active = await _lock_session(conn, session_id)
    cur = await conn.execute(
        "SELECT nextval(pg_get_serial_sequence('messages', 'id')) FROM generate_series(1, %s)",
        (len(messages),),
    )
    ids = sorted(int(r[0]) for r in await cur.fetchall())
    async with conn.cursor().copy(f"COPY messages ({_INSERT_COLUMNS}) FROM STDIN") as copy:
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
async def add_usage(conn: Conn, session_id: str, *, values: dict[str, int]) -> None:
    cur = await conn.execute(
        "UPDATE sessions SET input_tokens = input_tokens + %s, output_tokens = output_tokens + %s, "
        "cache_read_tokens = cache_read_tokens + %s, cache_write_tokens = cache_write_tokens + %s, "
        "reasoning_tokens = reasoning_tokens + %s, api_call_count = api_call_count + %s WHERE id = %s",
        (
            values["input"],
            values["output"],
            values["cache_read"],
            values["cache_write"],
            values["reasoning"],
            values["api_calls"],
            session_id,
        ),
    )
    if cur.rowcount != 1:
        raise SessionNotFoundError(f"session {session_id!r} does not exist; create it first")


async def record_flush(
    conn: Conn,
    session_id: str,
    *,
    timestamp: float,
    mode: FlushMode,
    saved: JsonValue,
    refused: JsonValue,
    reply: str,
) -> int:
    if not await _exists(conn, session_id):
        raise SessionNotFoundError(f"session {session_id!r} does not exist; create it first")
    # json.dumps writes NUL as the escape \\u0000, which text holds fine.
    cur = await conn.execute(
        "INSERT INTO flushes (session_id, timestamp, mode, saved, refused, reply) "
        "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
        (
            session_id,
            timestamp,
            mode,
            json.dumps(json_safe(saved), ensure_ascii=False),
            json.dumps(json_safe(refused), ensure_ascii=False),
            pg_text(reply),
        ),
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
    out: list[FlushRecord] = []
    for r in await cur.fetchall():
        try:
            saved, refused = _JSON.validate_json(r[4]), _JSON.validate_json(r[5])
        except ValidationError as exc:
            raise SessionStoreCorruptError(
                f"flush record {r[0]!r} holds invalid JSON; the row was edited outside keel"
            ) from exc
        out.append(FlushRecord(int(r[0]), str(r[1]), float(r[2]), r[3], saved, refused, str(r[6])))
    return out


async def get_session(conn: Conn, session_id: str) -> SessionRecord | None:
    cur = await conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,))
    row = await cur.fetchone()
    return None if row is None else session_from_row(row)


async def list_sessions(
    conn: Conn,
    *,
    limit: int,
    offset: int,
    order: str,
    exclude: Sequence[str],
    user_ids: Sequence[str] | None,
) -> list[SessionRecord]:
    column = "last_active_at" if order == "last_active" else "started_at"
    tests = ["NOT (id = ANY(%s))"]
    args: list[object] = [list(exclude)]
    if user_ids is not None:
        tests.append("user_id = ANY(%s)")
        args.append(list(user_ids))
    cur = await conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(tests)} "
        f"ORDER BY {column} DESC, row_id DESC LIMIT %s OFFSET %s",
        (*args, limit, offset),
    )
    return [session_from_row(r) for r in await cur.fetchall()]


async def get_messages(
    conn: Conn,
    session_id: str,
    *,
    start_seq: int,
    limit: int | None,
    from_end: bool,
    roles: Sequence[StoredRole] | None,
) -> list[MessageRecord]:
    role_sql = "" if roles is None else " AND role = ANY(%s)"
    role_args: tuple[object, ...] = () if roles is None else (list(roles),)
    direction = "DESC" if from_end else "ASC"
    cur = await conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = %s AND seq >= %s{role_sql} "
        f"ORDER BY seq {direction} LIMIT %s",
        (session_id, start_seq, *role_args, limit),
    )
    records = [message_from_row(r) for r in await cur.fetchall()]
    return records[::-1] if from_end else records


async def get_message(conn: Conn, message_id: int) -> MessageRecord | None:
    if not -(2**63) <= message_id < 2**63:
        return None  # no bigint id can match; PostgreSQL would refuse the parameter
    cur = await conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = %s", (message_id,))
    row = await cur.fetchone()
    return None if row is None else message_from_row(row)


async def _rows(conn: Conn, sql: str, args: tuple[object, ...]) -> list[MessageRecord]:
    cur = await conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {sql}", args)
    return [message_from_row(r) for r in await cur.fetchall()]


async def anchored_view(conn: Conn, message_id: int, *, window: int, bookend: int) -> AnchoredView | None:
    anchor = await get_message(conn, message_id)
    if anchor is None:
        return None
    sid, seq = anchor.session_id, anchor.seq
    near = f"session_id = %s AND {VISIBLE} AND seq "
    before = await _rows(conn, near + "< %s ORDER BY seq DESC LIMIT %s", (sid, seq, window))
    after = await _rows(conn, near + "> %s ORDER BY seq ASC LIMIT %s", (sid, seq, window))
    low = before[-1].seq if before else seq
    high = after[-1].seq if after else seq
    ends = f"session_id = %s AND {VISIBLE} AND NOT summary AND seq "
    start = await _rows(conn, ends + "< %s ORDER BY seq ASC LIMIT %s", (sid, low, bookend))
    end = await _rows(conn, ends + "> %s ORDER BY seq DESC LIMIT %s", (sid, high, bookend))
    session = await get_session(conn, sid)
    if session is None:
        return None
    return AnchoredView(
        session=session,
        anchor=anchor,
        before=tuple(reversed(before)),
        after=tuple(after),
        bookend_start=tuple(start),
        bookend_end=tuple(reversed(end)),
        messages_before=low,
        messages_after=max(0, session.message_count - high - 1),
    )


async def lineage_roots(conn: Conn, session_ids: Sequence[str]) -> dict[str, str]:
    """Each id's lineage root; the ancestors come in one recursive query (UNION stops at loops)."""
    if not session_ids:
        return {}
    cur = await conn.execute(
        "WITH RECURSIVE up(id, parent) AS ("
        "SELECT id, parent_session_id FROM sessions WHERE id = ANY(%s) "
        "UNION SELECT s.id, s.parent_session_id FROM sessions s JOIN up ON s.id = up.parent) "
        "SELECT id, parent FROM up",
        (sorted(set(session_ids)),),
    )
    parents = {str(r[0]): None if r[1] is None else str(r[1]) for r in await cur.fetchall()}
    return roots_from_parents(session_ids, parents)
