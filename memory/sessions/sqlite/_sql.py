"""Synchronous reads and writes on `state.db`; `SessionDB` runs each in a worker thread.

Every function takes an open `sqlite3.Connection` that is already inside a transaction
(`SqliteConnection.write` / `.read`), so a check followed by a write (does the parent
exist? what is the next `seq`?) sees one consistent state.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import cast

from memory.errors import SessionConflictError, SessionNotFoundError
from memory.sessions import _records, _rows, writes
from memory.sessions.reads import ListSessions, SelectMessages

__all__ = [
    "VISIBLE",
    "add_usage",
    "anchored_view",
    "append_messages",
    "apply",
    "continuation",
    "create_session",
    "end_session",
    "get_message",
    "get_messages",
    "get_session",
    "lineage_roots",
    "list_flushes",
    "list_sessions",
    "record_flush",
    "user_clause",
]


def apply(conn: sqlite3.Connection, write: writes.SessionWrite) -> writes.WriteResult:
    """Run one write value in the caller's transaction (its arguments were checked when it was made)."""
    sid = write.session_id
    match write:
        case writes.CreateSession():
            create_session(conn, write)
            return None
        case writes.AppendMessages():
            return append_messages(conn, sid, write.messages, usage=write.usage)
        case writes.EndSession():
            return end_session(conn, sid, reason=write.reason, ended_at=write.ended_at)
        case writes.AddUsage():
            add_usage(conn, sid, write.counts)
            return None
        case writes.RecordFlush():
            return record_flush(conn, write)


def _require_session(conn: sqlite3.Connection, session_id: str) -> tuple[int, float]:
    row = conn.execute(
        "SELECT message_count, COALESCE(last_active_at, started_at) FROM sessions WHERE id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        raise SessionNotFoundError(f"session {session_id!r} does not exist; create it first")
    return int(row[0]), float(row[1])


def create_session(conn: sqlite3.Connection, write: writes.CreateSession) -> None:
    session_id, parent = write.session_id, write.parent_session_id
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
        raise SessionConflictError(f"session {session_id!r} already exists; pick a new id")
    if parent is not None:
        _require_session(conn, parent)
    conn.execute(
        f"INSERT INTO sessions ({_rows.SESSION_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        _rows.session_values(write, ident=str, text=_records.utf8_safe),
    )


def end_session(
    conn: sqlite3.Connection, session_id: str, *, reason: _records.EndReason, ended_at: float
) -> bool:
    _require_session(conn, session_id)
    cur = conn.execute(
        "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
        (ended_at, reason, session_id),
    )
    return cur.rowcount == 1


def append_messages(
    conn: sqlite3.Connection,
    session_id: str,
    messages: Sequence[_records.StoredMessage],
    *,
    usage: _records.StoredUsage | None = None,
) -> list[int]:
    """Insert the rows; move the session's count, last activity and (with `usage`) its counters."""
    count, last_active = _require_session(conn, session_id)
    ids: list[int] = []
    for offset, m in enumerate(messages):
        cur = conn.execute(
            f"INSERT INTO messages ({_rows.MESSAGE_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _rows.message_values(session_id, count + offset, m, text=str),  # the value made its text storable
        )
        ids.append(int(cast(int, cur.lastrowid)))
        last_active = max(last_active, m.timestamp)
    moved = "message_count = ?, last_active_at = ?"
    values: tuple[object, ...] = (count + len(messages), last_active)
    if usage is not None:  # the reply's usage joins the counters in the same statement
        moved, values = f"{moved}, {_rows.counters_added('?')}", (*values, *_rows.usage_values(usage))
    conn.execute(f"UPDATE sessions SET {moved} WHERE id = ?", (*values, session_id))
    return ids


def add_usage(conn: sqlite3.Connection, session_id: str, usage: _records.StoredUsage) -> None:
    _require_session(conn, session_id)
    conn.execute(
        f"UPDATE sessions SET {_rows.counters_added('?')} WHERE id = ?",
        (*_rows.usage_values(usage), session_id),
    )


def record_flush(conn: sqlite3.Connection, write: writes.RecordFlush) -> int:
    _require_session(conn, write.session_id)
    cur = conn.execute(
        f"INSERT INTO flushes ({_rows.FLUSH_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        _rows.flush_values(write, ident=str, text=_records.utf8_safe),
    )
    return int(cast(int, cur.lastrowid))


def list_flushes(conn: sqlite3.Connection, session_id: str) -> list[_records.FlushRecord]:
    rows = conn.execute(
        "SELECT id, session_id, timestamp, mode, saved, refused, reply FROM flushes "
        "WHERE session_id = ? ORDER BY id",
        (session_id,),
    ).fetchall()
    return [_rows.flush_from_row(tuple(r)) for r in rows]


def get_session(conn: sqlite3.Connection, session_id: str) -> _records.SessionRecord | None:
    row = conn.execute(f"SELECT {_rows.SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else _rows.session_from_row(row)


def continuation(conn: sqlite3.Connection, session_id: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM sessions WHERE parent_session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return None if row is None else str(row[0])


def user_clause(column: str, user_ids: Sequence[str] | None) -> tuple[str, tuple[str, ...]]:
    """`column IN (...)` for a user filter: ("", ()) for None, an always-false test for none."""
    if user_ids is None:
        return "", ()
    if not user_ids:
        return "0", ()
    return f"{column} IN ({','.join('?' * len(user_ids))})", tuple(user_ids)


def list_sessions(conn: sqlite3.Connection, query: ListSessions) -> list[_records.SessionRecord]:
    column = "COALESCE(last_active_at, started_at)" if query.order == "last_active" else "started_at"
    exclude = query.exclude
    tests: list[str] = []
    if exclude:
        tests.append(f"id NOT IN ({','.join('?' * len(exclude))})")
    user_sql, user_args = user_clause("user_id", query.user_ids)
    if user_sql:
        tests.append(user_sql)
    where = f"WHERE {' AND '.join(tests)}" if tests else ""
    rows = conn.execute(
        f"SELECT {_rows.SESSION_COLUMNS} FROM sessions {where} ORDER BY {column} DESC, rowid DESC LIMIT ? OFFSET ?",
        (*exclude, *user_args, query.limit, query.offset),
    ).fetchall()
    return [_rows.session_from_row(r) for r in rows]


def _role_clause(roles: Sequence[_records.StoredRole] | None) -> tuple[str, tuple[str, ...]]:
    if roles is None:
        return "", ()
    return f" AND role IN ({','.join('?' * len(roles))})", tuple(roles)


def get_messages(conn: sqlite3.Connection, query: SelectMessages) -> list[_records.MessageRecord]:
    role_sql, role_args = _role_clause(query.roles)
    direction = "DESC" if query.from_end else "ASC"
    rows = conn.execute(
        f"SELECT {_rows.MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq >= ?{role_sql} "
        f"ORDER BY seq {direction} LIMIT ?",
        (query.session_id, query.start_seq, *role_args, -1 if query.limit is None else query.limit),
    ).fetchall()
    records = [_rows.message_from_row(tuple(r)) for r in rows]
    return records[::-1] if query.from_end else records


def get_message(conn: sqlite3.Connection, message_id: int) -> _records.MessageRecord | None:
    row = conn.execute(f"SELECT {_rows.MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,)).fetchone()
    return None if row is None else _rows.message_from_row(tuple(row))


VISIBLE = "role IN ('user', 'assistant') AND content <> ''"


def anchored_view(
    conn: sqlite3.Connection, message_id: int, *, window: int, bookend: int
) -> _records.AnchoredView | None:
    anchor = get_message(conn, message_id)
    if anchor is None:
        return None
    sid, seq = anchor.session_id, anchor.seq
    before = conn.execute(
        f"SELECT {_rows.MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq < ? AND {VISIBLE} "
        "ORDER BY seq DESC LIMIT ?",
        (sid, seq, window),
    ).fetchall()
    after = conn.execute(
        f"SELECT {_rows.MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq > ? AND {VISIBLE} "
        "ORDER BY seq ASC LIMIT ?",
        (sid, seq, window),
    ).fetchall()
    low = int(before[-1][2]) if before else seq
    high = int(after[-1][2]) if after else seq
    bookend_sql = (
        f"SELECT {_rows.MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND {VISIBLE} AND summary = 0 "
    )
    start = conn.execute(bookend_sql + "AND seq < ? ORDER BY seq ASC LIMIT ?", (sid, low, bookend)).fetchall()
    end = conn.execute(bookend_sql + "AND seq > ? ORDER BY seq DESC LIMIT ?", (sid, high, bookend)).fetchall()
    session = get_session(conn, sid)
    if session is None:
        return None  # only a hand-edited database has messages without a session
    total = session.message_count
    return _records.AnchoredView(
        session=session,
        anchor=anchor,
        before=tuple(_rows.message_from_row(tuple(r)) for r in reversed(before)),
        after=tuple(_rows.message_from_row(tuple(r)) for r in after),
        bookend_start=tuple(_rows.message_from_row(tuple(r)) for r in start),
        bookend_end=tuple(_rows.message_from_row(tuple(r)) for r in reversed(end)),
        messages_before=low,
        messages_after=max(0, total - high - 1),
    )


def _parents(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for i in range(0, len(ids), 500):  # stay far below SQLite's bound-parameter limit
        chunk = ids[i : i + 500]
        rows = conn.execute(
            f"SELECT id, parent_session_id FROM sessions WHERE id IN ({','.join('?' * len(chunk))})", chunk
        ).fetchall()
        found.update({str(r[0]): None if r[1] is None else str(r[1]) for r in rows})
    return found


def lineage_roots(conn: sqlite3.Connection, session_ids: Sequence[str]) -> dict[str, str]:
    """Each id's lineage root: follow `parent_session_id` until it ends, loops or vanishes.

    Parents are fetched a generation at a time for all ids together (one query per level
    of depth, not per session). An id that does not exist is its own root.
    """
    parents: dict[str, str | None] = {}
    frontier = sorted(set(session_ids))
    for _ in range(_rows.MAX_LINEAGE_DEPTH):
        if not frontier:
            break
        fetched = _parents(conn, frontier)
        for sid in frontier:
            parents[sid] = fetched.get(sid)
        frontier = sorted({p for p in fetched.values() if p is not None and p not in parents})
    return _rows.roots_from_parents(session_ids, parents)
