"""Rows in, records out: the column lists and decoders both backends share.

The tables have the same columns on SQLite and PostgreSQL, so a row read with
`SESSION_COLUMNS` or `MESSAGE_COLUMNS` decodes the same way on either; flush payloads are
JSON text on both. Lineage roots are computed here from parent links a backend fetched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
    utf8_safe,
)

__all__ = [
    "MAX_LINEAGE_DEPTH",
    "MESSAGE_COLUMNS",
    "SESSION_COLUMNS",
    "flush_from_row",
    "flush_json",
    "message_from_row",
    "roots_from_parents",
    "session_from_row",
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
