"""Why keel believes a memory entry: the session, the write and the message it came from.

A memory entry is written by a flush, a memory review or a memory tool call, all inside a
session the session store keeps. The flush and the review record each entry they save with
the message it rests on (`FlushEntry.grounded_on`, in the flush record's `saved` rows); a
tool call is an assistant message whose `memory` call carries the entry, and the user
message before it is what the model was answering. `entry_origins` looks both up, newest
first, for `keel memory list --why`. An entry found in neither was written by hand or by
`keel memory add` (or before keel recorded the flush's grounds).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from harness.compress.flush import grounds_of
from harness.types import Message
from memory import SessionStore
from memory.sessions import MessageRecord

__all__ = ["EntryOrigin", "entry_origins"]

_SESSIONS = 200
"""The newest sessions searched for flush records."""
_TRANSCRIPTS = 50
"""The newest sessions whose messages are searched for memory tool calls."""


@dataclass(frozen=True, slots=True)
class EntryOrigin:
    """Where one memory entry came from."""

    session_id: str
    via: str
    """`flush`, `review`, or `memory tool call`."""
    timestamp: float
    grounded_on: str
    """The message it rests on, cut short ("" when the record does not say)."""


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _saved_rows(saved: JsonValue) -> list[dict[str, JsonValue]]:
    return [r for r in saved if isinstance(r, dict)] if isinstance(saved, list) else []


def _written(tool_calls: str | None) -> list[str]:
    """The contents a message's `memory` calls add or replace."""
    try:
        calls = json.loads(tool_calls) if tool_calls else []
    except ValueError:
        return []
    out: list[str] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict) or call.get("name") != "memory":
            continue
        try:
            args = json.loads(str(call.get("arguments") or "{}"))
        except ValueError:
            continue
        ops = args.get("operations") if isinstance(args, dict) else None
        for op in ops if isinstance(ops, list) else [args]:
            if isinstance(op, dict) and isinstance(op.get("content"), str):
                out.append(op["content"])
    return out


def _from_calls(records: Sequence[MessageRecord], wanted: dict[str, str]) -> dict[str, EntryOrigin]:
    """The entries one session's memory calls wrote (its latest write of each), each with the
    user message the call answered."""
    out: dict[str, EntryOrigin] = {}
    said: list[Message] = []
    for r in records:
        m = r.message
        if m.role == "user":
            said = [Message("user", m.content)]
        for content in _written(m.tool_calls):
            entry = wanted.get(_key(content))
            if entry is not None:
                out[entry] = EntryOrigin(
                    r.session_id, "memory tool call", m.timestamp, grounds_of(entry, said)
                )
    return out


async def entry_origins(db: SessionStore, user_id: str, entries: Sequence[str]) -> dict[str, EntryOrigin]:
    """Each entry's newest origin in `user_id`'s sessions (entries with none are left out)."""
    wanted = {_key(e): e for e in entries}
    found: dict[str, EntryOrigin] = {}
    sessions = await db.list_sessions(limit=_SESSIONS, user_ids=[user_id])
    for record in sessions:
        for flush in reversed(await db.list_flushes(record.id)):
            for row in _saved_rows(flush.saved):
                entry = wanted.get(_key(str(row.get("content", ""))))
                if entry is not None and entry not in found:
                    found[entry] = EntryOrigin(
                        record.id,
                        str(row.get("via") or "flush"),
                        flush.timestamp,
                        str(row.get("grounded_on") or ""),
                    )
    for record in sessions[:_TRANSCRIPTS]:
        if len(found) == len(wanted):
            break
        for entry, origin in _from_calls(await db.get_messages(record.id), wanted).items():
            found.setdefault(entry, origin)
    return found
