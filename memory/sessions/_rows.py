"""Rows in, records out: the column lists, values and decoders both backends share.

The tables have the same columns on SQLite and PostgreSQL, so a row read with
`SESSION_COLUMNS` or `MESSAGE_COLUMNS` decodes the same way on either, and a new session,
a flush and a usage are written as the same values in the same order (each backend makes
ids and text storable its own way); flush payloads are JSON text on both. Lineage roots
are computed here from parent links a backend fetched.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from pydantic import JsonValue, TypeAdapter, ValidationError

from memory.errors import SessionStoreCorruptError
from memory.sessions._records import (
    EndReason,
    FlushMode,
    FlushRecord,
    MessageRecord,
    SessionRecord,
    StoredMessage,
    StoredRole,
    StoredUsage,
    utf8_safe,
)
from memory.sessions.writes import CreateSession, RecordFlush

__all__ = [
    "FLUSH_INSERT_COLUMNS",
    "MAX_LINEAGE_DEPTH",
    "MESSAGE_COLUMNS",
    "MESSAGE_INSERT_COLUMNS",
    "SESSION_COLUMNS",
    "SESSION_INSERT_COLUMNS",
    "Storable",
    "counters_added",
    "flush_from_row",
    "flush_json",
    "flush_values",
    "message_from_row",
    "message_values",
    "roots_from_parents",
    "session_from_row",
    "session_values",
    "usage_values",
]

_JSON = TypeAdapter(JsonValue)

MAX_LINEAGE_DEPTH = 10_000
"""A lineage walk stops after this many generations (only hand-edited rows get that deep)."""

SESSION_COLUMNS = (
    "id, source, model, parent_session_id, started_at, ended_at, end_reason, title, message_count, "
    "COALESCE(last_active_at, started_at), input_tokens, output_tokens, cache_read_tokens, "
    "cache_write_tokens, reasoning_tokens, api_call_count, user_id, memory_snapshot"
)
MESSAGE_COLUMNS = (
    "id, session_id, seq, role, content, timestamp, api_content, tool_calls, tool_call_id, "
    "tool_name, token_count, summary"
)
SESSION_INSERT_COLUMNS = (
    "id, source, model, parent_session_id, started_at, title, last_active_at, user_id, memory_snapshot"
)
"""The columns `session_values` fills (a new session is last active when it starts)."""
MESSAGE_INSERT_COLUMNS = "session_id, seq, role, content, api_content, tool_calls, tool_call_id, tool_name, timestamp, token_count, summary"
"""The columns `message_values` fills (ids are the database's)."""
FLUSH_INSERT_COLUMNS = "session_id, timestamp, mode, saved, refused, reply"
"""The columns `flush_values` fills."""
_COUNTERS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "api_call_count",
)

Storable = Callable[[str], str]
"""How a backend stores text: SQLite repairs what UTF-8 cannot hold, PostgreSQL also replaces NULs."""


def session_values(write: CreateSession, *, ident: Storable, text: Storable) -> tuple[object, ...]:
    """The values of `SESSION_INSERT_COLUMNS` for `write`: ids as the backend keys them
    (`ident`), text as it stores it (`text`)."""

    def maybe(value: str | None, store: Storable) -> str | None:
        return None if value is None else store(value)

    at = write.started_at
    return (
        ident(write.session_id),
        text(write.source),
        maybe(write.model, text),
        maybe(write.parent_session_id, ident),
        at,
        maybe(write.title, text),
        at,
        text(write.user_id),
        maybe(write.memory_snapshot, text),
    )


def message_values(session_id: str, seq: int, m: StoredMessage, *, text: Storable) -> tuple[object, ...]:
    """The values of `MESSAGE_INSERT_COLUMNS` for message `m` at `seq` (see `session_values`)."""

    def maybe(value: str | None) -> str | None:
        return None if value is None else text(value)

    return (
        session_id,
        seq,
        m.role,
        text(m.content),
        maybe(m.api_content),
        maybe(m.tool_calls),
        maybe(m.tool_call_id),
        maybe(m.tool_name),
        m.timestamp,
        m.token_count,
        m.summary,
    )


def flush_values(write: RecordFlush, *, ident: Storable, text: Storable) -> tuple[object, ...]:
    """The values of `FLUSH_INSERT_COLUMNS` for `write` (see `session_values`)."""
    saved, refused = flush_json(write.saved), flush_json(write.refused)
    return (ident(write.session_id), write.timestamp, write.mode, saved, refused, text(write.reply))


def counters_added(mark: str) -> str:
    """The `SET` items that add `usage_values` (bound with `mark`, the driver's placeholder)
    to a session's counters."""
    return ", ".join(f"{c} = {c} + {mark}" for c in _COUNTERS)


def usage_values(usage: StoredUsage) -> tuple[int, ...]:
    """A usage's counts in the order `counters_added` names the counters."""
    return (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.reasoning, usage.api_calls)


def session_from_row(row: Sequence[object]) -> SessionRecord:
    """A `SessionRecord` from a row of `SESSION_COLUMNS`."""
    r = tuple(row)
    return SessionRecord(
        id=str(r[0]),
        source=str(r[1]),
        user_id=str(r[16]),
        model=None if r[2] is None else str(r[2]),
        parent_session_id=None if r[3] is None else str(r[3]),
        started_at=float(cast(float, r[4])),
        ended_at=None if r[5] is None else float(cast(float, r[5])),
        end_reason=None if r[6] is None else cast(EndReason, str(r[6])),
        title=None if r[7] is None else str(r[7]),
        message_count=int(cast(int, r[8])),
        last_active_at=float(cast(float, r[9])),
        input_tokens=int(cast(int, r[10])),
        output_tokens=int(cast(int, r[11])),
        cache_read_tokens=int(cast(int, r[12])),
        cache_write_tokens=int(cast(int, r[13])),
        reasoning_tokens=int(cast(int, r[14])),
        api_call_count=int(cast(int, r[15])),
        memory_snapshot=None if r[17] is None else str(r[17]),
    )


def message_from_row(row: Sequence[object]) -> MessageRecord:
    """A `MessageRecord` from a row of `MESSAGE_COLUMNS`."""
    r = row
    return MessageRecord(
        id=int(cast(int, r[0])),
        session_id=str(r[1]),
        seq=int(cast(int, r[2])),
        message=StoredMessage(
            role=cast(StoredRole, str(r[3])),
            content=str(r[4]),
            timestamp=float(cast(float, r[5])),
            api_content=None if r[6] is None else str(r[6]),
            tool_calls=None if r[7] is None else str(r[7]),
            tool_call_id=None if r[8] is None else str(r[8]),
            tool_name=None if r[9] is None else str(r[9]),
            token_count=None if r[10] is None else int(cast(int, r[10])),
            summary=bool(r[11]),
        ),
    )


def _json_safe(value: JsonValue) -> JsonValue:
    # Lone surrogates would make JSON that strict parsers (pydantic's) refuse to read back.
    if isinstance(value, str):
        return utf8_safe(value)
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {utf8_safe(k): _json_safe(v) for k, v in value.items()}
    return value


def flush_json(value: JsonValue) -> str:
    """A flush payload (`saved`, `refused`) as the JSON text both backends store."""
    # json.dumps writes NUL as the escape \\u0000, which PostgreSQL text holds fine.
    return json.dumps(_json_safe(value), ensure_ascii=False)


def flush_from_row(row: Sequence[object]) -> FlushRecord:
    """A `FlushRecord` from `id, session_id, timestamp, mode, saved, refused, reply`.

    Raises:
        SessionStoreCorruptError: a payload is not JSON (the row was edited outside keel).
    """
    r = row
    try:
        saved, refused = _JSON.validate_json(str(r[4])), _JSON.validate_json(str(r[5]))
    except ValidationError as exc:
        raise SessionStoreCorruptError(
            f"flush record {r[0]!r} holds invalid JSON; the row was edited outside keel"
        ) from exc
    return FlushRecord(
        int(cast(int, r[0])),
        str(r[1]),
        float(cast(float, r[2])),
        cast(FlushMode, r[3]),
        saved,
        refused,
        str(r[6]),
    )


def roots_from_parents(session_ids: Sequence[str], parents: Mapping[str, str | None]) -> dict[str, str]:
    """The lineage root of each id, given the parent link of every session reachable from them."""
    roots: dict[str, str] = {}
    for start in session_ids:
        if start in roots:
            continue
        path: list[str] = []
        seen: set[str] = set()
        current = start
        while len(path) < MAX_LINEAGE_DEPTH:
            if current in roots:
                break
            path.append(current)
            seen.add(current)
            parent = parents.get(current)
            if parent is None:
                break
            if parent in seen:
                # A cycle (only hand-edited rows can make one): every member gets the same
                # root, the smallest id of the loop, whichever member the walk started from.
                current = min(path[path.index(parent) :])
                break
            current = parent
        root = roots.get(current, current)
        for sid in path:
            roots[sid] = root
    return {sid: roots[sid] for sid in session_ids}
