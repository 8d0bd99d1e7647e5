"""Continuing a recorded session, maybe on another worker than the one that started it.

A resumed session reads its row and messages from the session store, pins the curated
memory to the versions recorded on the row (`MemoryStore.snapshot_pin`) and the skills slot
to the text the row recorded (`prompt_pin`: a skill created since does not change it), and
rebuilds the frozen prefix from them: the same bytes the session started with, so provider
caches keep hitting. A row recorded before the skills slot was pinned says so in a warning. Before every turn, under the session lease, it takes the turns another worker
added meanwhile (`catch_up`).

A compression ends a session row and continues in a child. Resuming a session that was
compressed continues its newest descendant instead (appending to the ended row would fork
the conversation); a worker still holding the ended row when its next turn starts — another
worker compressed it meanwhile — gets a clear error naming where the conversation went on,
and nothing runs. A turn whose worker lost the session mid-tool (killed, or fenced off when
its lease went with its connection) leaves a tool call without a result in the store; the
messages read back are repaired as a cancelled turn's are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import JsonValue

from harness.compress.plan import repair_tool_pairs
from harness.errors import SessionError
from harness.loop.parts import CatchUp
from harness.loop.session import Session
from harness.types import Message
from harness.wiring.memory_bridge import StoreMemory, restored
from harness.wiring.slots import SkillsPin
from memory import MemoryStore, Principal, SessionStore

__all__ = ["catch_up_from", "newest_continuation", "prompt_pin", "resume_session"]

_SKILLS = "skills"
"""The key of the skills slot's text in a row's pin, beside the curated targets' versions."""


def prompt_pin(store: MemoryStore | None, skills: SkillsPin) -> str | None:
    """What a session row records of its prompt (`memory_snapshot`): the curated store's
    `snapshot_pin()` (a JSON object of its targets' versions) with the skills slot's text
    beside them. None when there is neither."""
    raw: dict[str, JsonValue] = {} if store is None else json.loads(store.snapshot_pin())
    if skills.shown is not None:
        raw[_SKILLS] = skills.shown
    return json.dumps(raw, sort_keys=True) if raw else None


def _pinned_skills(pin: str | None) -> str | None:
    try:
        raw = json.loads(pin) if pin else None
    except ValueError:
        return None
    text = raw.get(_SKILLS) if isinstance(raw, dict) else None
    return text if isinstance(text, str) else None


_MAX_FOLLOW = 10_000  # compressions followed at most (a loop in damaged rows cannot hang a resume)


async def _messages(db: SessionStore, session_id: str) -> list[Message]:
    """The stored messages, with the tool calls of a turn that never got their results (its
    worker lost the session: killed, or fenced off) stripped, as a cancelled turn is: no
    endpoint accepts a call followed by anything but its result."""
    return repair_tool_pairs([restored(r.message) for r in await db.get_messages(session_id)])


async def newest_continuation(db: SessionStore, session_id: str) -> str | None:
    """Where the conversation of `session_id` goes on after its compressions (None: nowhere)."""
    newest, seen = None, {session_id}
    current = await db.continuation(session_id)
    while current is not None and current not in seen and len(seen) < _MAX_FOLLOW:
        newest = current
        seen.add(current)
        current = await db.continuation(current)
    return newest


def catch_up_from(db: SessionStore) -> CatchUp:
    """The session's stored messages when the store holds more than the caller (see `SessionParts.catch_up`).

    Raises:
        SessionError: another worker compressed the session and continued it in a child.
    """

    async def catch_up(session_id: str, held: int) -> Sequence[Message] | None:
        record = await db.get_session(session_id)
        if record is None:
            return None
        if record.end_reason == "compression" and (newest := await newest_continuation(db, session_id)):
            raise SessionError(
                f"session {session_id!r} was compressed on another worker and goes on as {newest!r}; "
                f"nothing was run. Resume {newest!r} (or {session_id!r}: a resume follows the compressions)."
            )
        if record.message_count <= held:
            return None
        return await _messages(db, session_id)

    return catch_up


async def resume_session(
    session: Session,
    db: SessionStore,
    principal: Principal,
    memory: StoreMemory | None,
    session_id: str,
    *,
    skills: SkillsPin | None = None,
) -> None:
    """Continue `session_id` in `session` (instead of `session.start()`); `skills` is the
    skills slot's pin the session's prompt builds read (see `prompt_pin`).

    Raises:
        SessionError: no such session, or it belongs to another user (never read across users).
        SnapshotUnavailableError: the memory versions it started with are no longer kept.
    """
    record = await db.get_session(session_id)
    if record is None or record.user_id != principal.session_user:
        # One message for both: whether another user's session exists is not ours to tell.
        raise SessionError(
            f"no session {session_id!r} for {principal.describe()}; list them with `keel sessions list`"
        )
    asked = session_id
    if record.end_reason == "compression" and (newest := await newest_continuation(db, session_id)):
        followed = await db.get_session(newest)
        if followed is not None and followed.user_id == record.user_id:
            session_id, record = newest, followed
    if memory is not None:
        memory.pin(record.memory_snapshot)
    recorded = _pinned_skills(record.memory_snapshot)
    if skills is not None:
        skills.pinned = recorded
    messages = await _messages(db, session_id)
    await session.resume(
        session_id,
        messages,
        turns=sum(1 for m in messages if m.role == "user"),
        parent_session_id=record.parent_session_id,
        lineage_root=await db.lineage_root(session_id),
    )
    if asked != session_id:
        session.warn(f"session {asked!r} was compressed and goes on as {session_id!r}; continuing that one")
    if skills is not None and recorded is None and skills.shown:
        session.warn(
            f"session {session_id!r} was recorded before keel pinned the skills index, so the prompt shows "
            "today's skills (one prompt-cache miss)"
        )
    if memory is not None and memory.store.pin_missed:
        names = " and ".join(sorted(memory.store.pin_missed))
        session.warn(
            f"the curated memory ({names}) changed since session {session_id!r} started and its files keep no "
            "older version, so the prompt shows today's memory (one prompt-cache miss)"
        )
