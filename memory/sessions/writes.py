"""Session writes as values: what a session store is asked to write, checked once.

Every write a session makes is one of five frozen values — `CreateSession`,
`AppendMessages` (one message or many, with the reply's usage in the same transaction),
`EndSession`, `AddUsage`, `RecordFlush` — and `SessionWriter.apply` takes any of them.
A value checks its arguments when it is made (an unknown role, an empty id, a negative
count: `ValueError`, before anything is written) and makes its text storable, so a
backend only turns it into SQL. The journal queues the same values, one JSON line each
(`WRITES` reads them back), so a write refused now is replayed later exactly as it was
asked.

A write made under a session lease carries its fence (`Fence`: see
`memory.sessions.contract`): the task's fence when the value is journalled, and `fenced`
sets it again for the replay.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Annotated, Literal, TypeAlias

from pydantic import Field, JsonValue, TypeAdapter

from memory.sessions._records import (
    EndReason,
    FlushMode,
    FlushRecord,
    SessionRecord,
    StoredMessage,
    StoredUsage,
)
from memory.sessions._validate import (
    check_end_reason,
    check_flush_mode,
    check_id,
    check_time,
    check_usage_counts,
    check_user_id,
    checked_message,
)

__all__ = [
    "WRITES",
    "AddUsage",
    "AppendMessages",
    "CreateSession",
    "EndSession",
    "Fence",
    "RecordFlush",
    "SessionWrite",
    "WriteResult",
    "appended",
    "current_fence",
    "fenced",
    "session_copy",
    "stamped",
]


@dataclass(frozen=True, slots=True)
class Fence:
    """The lease a write is made under: the lineage it leases, the token taking it got, and
    who took it (one id per lease object, so per process)."""

    lineage: str
    token: int
    holder: str


_FENCE: ContextVar[Fence | None] = ContextVar("keel_session_fence", default=None)


def current_fence() -> Fence | None:
    """The fence the current task writes under (None: unfenced)."""
    return _FENCE.get()


@contextmanager
def fenced(fence: Fence | None) -> Iterator[None]:
    """Make the writes of this task (and of the tasks it starts) carry `fence`."""
    token = _FENCE.set(fence)
    try:
        yield
    finally:
        _FENCE.reset(token)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateSession:
    """Record a new session for `user_id` (`""`: the default user; a child gets its parent's).

    `parent_session_id` is the session this one continues (a compression) and must exist;
    `memory_snapshot` is the curated memory's `snapshot_pin()` the prompt was built from.
    """

    session_id: str
    source: str
    started_at: float
    model: str | None = None
    parent_session_id: str | None = None
    title: str | None = None
    user_id: str = ""
    memory_snapshot: str | None = None
    fence: Fence | None = None
    kind: Literal["create"] = "create"

    def __post_init__(self) -> None:
        check_id(self.session_id, "session_id")
        check_id(self.source, "source")
        check_time(self.started_at, "started_at")
        if self.parent_session_id is not None:
            check_id(self.parent_session_id, "parent_session_id")
        check_user_id(self.user_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendMessages:
    """Append messages at the end of a session in one transaction (all or none); `usage`
    (the reply's) joins the session's counters in the same transaction."""

    session_id: str
    messages: tuple[StoredMessage, ...]
    usage: StoredUsage | None = None
    fence: Fence | None = None
    kind: Literal["messages"] = "messages"

    def __post_init__(self) -> None:
        check_usage_counts(self.usage)
        object.__setattr__(self, "messages", tuple(checked_message(m) for m in self.messages))


@dataclass(frozen=True, slots=True, kw_only=True)
class EndSession:
    """Mark a session ended (a second end changes nothing)."""

    session_id: str
    reason: EndReason
    ended_at: float
    fence: Fence | None = None
    kind: Literal["end"] = "end"

    def __post_init__(self) -> None:
        check_end_reason(self.reason)
        check_time(self.ended_at, "ended_at")


@dataclass(frozen=True, slots=True, kw_only=True)
class AddUsage:
    """Add replies' normalised usage to a session's counters (`api_calls`: the model calls it covers)."""

    session_id: str
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    api_calls: int = 1
    fence: Fence | None = None
    kind: Literal["usage"] = "usage"

    def __post_init__(self) -> None:
        check_usage_counts(self.counts)

    @property
    def counts(self) -> StoredUsage:
        """The counters as a `StoredUsage`."""
        return StoredUsage(
            input=self.input,
            output=self.output,
            cache_read=self.cache_read,
            cache_write=self.cache_write,
            reasoning=self.reasoning,
            api_calls=self.api_calls,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordFlush:
    """Log a memory flush: what it saved, what was refused (JSON), the reply text."""

    session_id: str
    timestamp: float
    mode: FlushMode
    saved: JsonValue
    refused: JsonValue
    reply: str
    fence: Fence | None = None
    kind: Literal["flush"] = "flush"

    def __post_init__(self) -> None:
        check_flush_mode(self.mode)
        check_time(self.timestamp, "timestamp")


SessionWrite: TypeAlias = CreateSession | AppendMessages | EndSession | AddUsage | RecordFlush
"""Any session write (`SessionWriter.apply` takes each)."""

WriteResult: TypeAlias = int | list[int] | bool | None
"""What `apply` returns: a flush's id (`RecordFlush`), the new messages' ids
(`AppendMessages`), whether the session was still open (`EndSession`), else None."""

WRITES = TypeAdapter[SessionWrite](Annotated[SessionWrite, Field(discriminator="kind")])
"""Reads and writes a `SessionWrite` as JSON (the journal's lines)."""


def appended(
    session_id: str, messages: Sequence[StoredMessage], usage: StoredUsage | None = None
) -> AppendMessages:
    """`AppendMessages` of `messages` (any sequence)."""
    return AppendMessages(session_id=session_id, messages=tuple(messages), usage=usage)


def session_copy(
    record: SessionRecord, messages: Sequence[StoredMessage], flushes: Sequence[FlushRecord]
) -> list[SessionWrite]:
    """The writes that make another store hold the session `record` describes: the session,
    its `messages`, its flush log, its counters and its end, in that order (what `keel
    storage migrate` applies to the new store)."""
    sid = record.id
    writes: list[SessionWrite] = [
        CreateSession(
            session_id=sid,
            source=record.source,
            started_at=record.started_at,
            model=record.model,
            parent_session_id=record.parent_session_id,
            title=record.title,
            user_id=record.user_id,
            memory_snapshot=record.memory_snapshot,
        )
    ]
    if messages:
        writes.append(appended(sid, messages))
    writes += [
        RecordFlush(
            session_id=sid,
            timestamp=f.timestamp,
            mode=f.mode,
            saved=f.saved,
            refused=f.refused,
            reply=f.reply,
        )
        for f in flushes
    ]
    if record.api_call_count or record.input_tokens or record.output_tokens:
        writes.append(
            AddUsage(
                session_id=sid,
                input=record.input_tokens,
                output=record.output_tokens,
                cache_read=record.cache_read_tokens,
                cache_write=record.cache_write_tokens,
                reasoning=record.reasoning_tokens,
                api_calls=record.api_call_count,
            )
        )
    if record.ended_at is not None and record.end_reason is not None:
        writes.append(EndSession(session_id=sid, reason=record.end_reason, ended_at=record.ended_at))
    return writes


def stamped(write: SessionWrite, fence: Fence | None) -> SessionWrite:
    """`write` carrying `fence` (the same value when it already does, or there is none)."""
    if fence is None or write.fence == fence:
        return write
    return replace(write, fence=fence)
