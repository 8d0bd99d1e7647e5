"""Continuing a recorded session, maybe on another worker than the one that started it.

A resumed session reads its row and messages from the session store, pins the curated
memory to the versions recorded on the row (`MemoryStore.snapshot_pin`), and rebuilds the
frozen prefix from them: the same bytes the session started with, so provider caches keep
hitting. Before every turn, under the session lease, it takes the turns another worker
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

from collections.abc import Sequence

from harness.compress.plan import repair_tool_pairs
from harness.errors import SessionError
from harness.loop.parts import CatchUp
from harness.loop.session import Session
from harness.types import Message
from harness.wiring.memory_bridge import StoreMemory, restored
from memory import Principal, SessionStore

__all__ = ["catch_up_from", "newest_continuation", "resume_session"]


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
    session: Session, db: SessionStore, principal: Principal, memory: StoreMemory | None, session_id: str
) -> None:
    """Continue `session_id` in `session` (instead of `session.start()`).

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
    if memory is not None and memory.store.pin_missed:
        names = " and ".join(sorted(memory.store.pin_missed))
        session.warn(
            f"the curated memory ({names}) changed since session {session_id!r} started and its files keep no "
            "older version, so the prompt shows today's memory (one prompt-cache miss)"
        )
