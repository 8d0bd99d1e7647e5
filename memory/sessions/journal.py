"""The write journal: session-store writes the store refused, kept on local disk until it takes them.

A store that refuses a write (state.db locked by another process past every retry,
PostgreSQL down or refusing connections, its pool exhausted, a lock held past
`lock_timeout`) must not cost a turn the user already saw. `JournalledWriter` sits in
front of a `SessionStore`:

1. while nothing is journalled, each write goes to the store as usual;
2. a write the store refuses is appended to the journal — one JSON line, written and
   fsynced before the call returns, in an owner-only file `<home>/journal/<name>.jsonl`
   held under an flock — and the call returns as if stored;
3. while the journal holds writes, each later write first replays them in order, then goes
   to the store; if the store still refuses, it joins the journal (order is kept). After a
   refusal the store is asked again only after a pause (2 s, doubling to 30 s), so an
   outage does not cost every write a full retry wait;
4. `settle()` at the end of the session tries once more, releases the file (deleting it
   when empty) and returns how many writes are still journalled — the caller tells the
   user loudly;
5. `replay_journals()` at the start of the next session on the home writes what earlier
   sessions left, each file only into the store its header names, and never a file whose
   owner still runs (it holds the flock).

Replaying is idempotent where a crash could make it repeat (the store committed but the
journal's checkpoint was not written): a session that exists is not created again, an
ended session is not ended again, and messages already at the end of their session
(same roles and timestamps) are not appended twice. Usage counters may be added twice in
that window; they are counters, not the conversation.

File format: the first line `{"kind": "header", "location": ...}`, then one write per
line; `{"kind": "applied", "count": n}` checkpoints say the first `n` writes are stored.
A torn last line (a crash mid-write: that write was never acknowledged) is ignored.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Literal, TypeAlias

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from memory._atomic import fsync_dir
from memory.errors import SessionConflictError, SessionFencedError, SessionQueryError, SessionStoreError
from memory.sessions._records import EndReason, FlushMode, StoredMessage, StoredUsage
from memory.sessions.contract import Fence, SessionStore, current_fence, fenced

__all__ = ["FENCED_DIR_NAME", "JOURNAL_DIR_NAME", "JournalledWriter", "replay_journals"]

JOURNAL_DIR_NAME = "journal"
"""The journal directory's name under the keel home."""

_FIRST_PAUSE_S = 2.0
_MAX_PAUSE_S = 30.0


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Header(_Op):
    kind: Literal["header"] = "header"
    location: str
    version: Literal[1] = 1
    identity: str | None = None
    """The store's `identity` (journals written before it existed have only `location`)."""


class _Applied(_Op):
    kind: Literal["applied"] = "applied"
    count: int


class _FenceLine(_Op):
    lineage: str
    token: int
    holder: str


class _WriteOp(_Op):
    fence: _FenceLine | None = None
    """The session lease the write was made under (`memory.sessions.contract.Fence`)."""


class _Create(_WriteOp):
    kind: Literal["create"] = "create"
    session_id: str
    source: str
    started_at: float
    model: str | None
    parent_session_id: str | None
    user_id: str
    memory_snapshot: str | None = None


class _Messages(_WriteOp):
    kind: Literal["messages"] = "messages"
    session_id: str
    messages: list[StoredMessage]


class _End(_WriteOp):
    kind: Literal["end"] = "end"
    session_id: str
    reason: EndReason
    ended_at: float


class _Usage(_WriteOp):
    kind: Literal["usage"] = "usage"
    session_id: str
    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int
    api_calls: int


class _Flush(_WriteOp):
    kind: Literal["flush"] = "flush"
    session_id: str
    timestamp: float
    mode: FlushMode
    saved: JsonValue
    refused: JsonValue
    reply: str


_Write: TypeAlias = _Create | _Messages | _End | _Usage | _Flush
_Line: TypeAlias = Annotated[
    _Header | _Applied | _Create | _Messages | _End | _Usage | _Flush, Field(discriminator="kind")
]
_LINE = TypeAdapter[_Line](_Line)


def _usage_op(session_id: str, usage: StoredUsage) -> _Usage:
    return _Usage(
        session_id=session_id,
        input=usage.input,
        output=usage.output,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        reasoning=usage.reasoning,
        api_calls=usage.api_calls,
    )


# Refusals the journal keeps; a caller's mistake (a duplicate id, a bad query) is raised as is,
# and so is a fenced write: the lease went to another worker, so it must never land later.
_CALLER_ERRORS = (SessionConflictError, SessionQueryError, SessionFencedError)


def _fence_of(op: _Write) -> Fence | None:
    f = op.fence
    return None if f is None else Fence(f.lineage, f.token, f.holder)


def _stamped(ops: tuple[_Write, ...]) -> tuple[_Write, ...]:
    """`ops` carrying the fence the current task writes under (unchanged when unfenced)."""
    fence = current_fence()
    if fence is None:
        return ops
    line = _FenceLine(lineage=fence.lineage, token=fence.token, holder=fence.holder)
    return tuple(op.model_copy(update={"fence": line}) for op in ops)


def _refused(exc: BaseException) -> bool:
    return isinstance(exc, SessionStoreError | OSError) and not isinstance(exc, _CALLER_ERRORS)


# ---------------------------------------------------------------------------- the file


@dataclass(slots=True)
class _File:
    """An open journal file: its path, its descriptor (flock held), and its writes."""

    path: Path
    fd: int
    writes: list[_Write]
    applied: int

    @property
    def pending(self) -> int:
        return len(self.writes) - self.applied

    def append(self, *lines: _Op) -> None:
        """Write `lines` and fsync once."""
        data = b"".join(line.model_dump_json().encode("utf-8") + b"\n" for line in lines)
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        os.fsync(self.fd)

    def close(self, *, delete: bool) -> None:
        try:
            if delete:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
                fsync_dir(self.path.parent)
        finally:
            os.close(self.fd)


def _create_file(directory: Path, header: _Header) -> _File:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = time.strftime("%Y%m%d_%H%M%S_") + f"{os.getpid()}_{uuid.uuid4().hex[:8]}.jsonl"
    path = directory / name
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        handle = _File(path, fd, [], 0)
        handle.append(header)
        fsync_dir(directory)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    return handle


def _open_existing(path: Path) -> _File | None:
    """An earlier session's journal, locked, or None when its owner runs or it is gone."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Another replayer may have finished and deleted it while we waited for the lock.
        if os.fstat(fd).st_ino != path.stat().st_ino:
            raise FileNotFoundError(path)
    except (BlockingIOError, FileNotFoundError):
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return _File(path, fd, [], 0)


def _read(handle: _File) -> _Header:
    """Fill `handle` from its lines; returns its header."""
    with os.fdopen(os.dup(handle.fd), "rb") as stream:
        stream.seek(0)
        raw = stream.read().split(b"\n")
    lines = [line for line in raw if line.strip()]
    header: _Header | None = None
    for i, line in enumerate(lines):
        try:
            parsed = _LINE.validate_json(line)
        except ValidationError:
            if i == len(lines) - 1:
                break  # torn by a crash mid-write: never acknowledged
            raise ValueError(f"journal {str(handle.path)!r} line {i + 1} cannot be read") from None
        if isinstance(parsed, _Header):
            header = parsed
        elif isinstance(parsed, _Applied):
            handle.applied = max(handle.applied, parsed.count)
        else:
            handle.writes.append(parsed)
    if header is None:
        raise ValueError(f"journal {str(handle.path)!r} has no header line")
    return header


# ---------------------------------------------------------------------------- replaying


def _journal_files(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".jsonl")
    except FileNotFoundError:
        return []


async def _already_stored(store: SessionStore, op: _Write) -> bool:
    """Whether `op` reached the store before a crash or a false refusal."""
    if isinstance(op, _Create):
        return await store.get_session(op.session_id) is not None
    if isinstance(op, _End):
        session = await store.get_session(op.session_id)
        return session is not None and session.ended_at is not None
    if isinstance(op, _Messages):
        tail = await store.get_messages(op.session_id, limit=len(op.messages), from_end=True)
        stored = [(r.message.role, r.message.timestamp) for r in tail]
        return stored == [(m.role, m.timestamp) for m in op.messages]
    return False


async def _apply(store: SessionStore, op: _Write) -> int | None:
    """Write `op` to the store; the new row's id for a single message, else None."""
    if isinstance(op, _Create):
        await store.create_session(
            op.session_id,
            source=op.source,
            started_at=op.started_at,
            model=op.model,
            parent_session_id=op.parent_session_id,
            user_id=op.user_id,
            memory_snapshot=op.memory_snapshot,
        )
    elif isinstance(op, _Messages) and len(op.messages) == 1:
        return await store.append_message(
            op.session_id, op.messages[0]
        )  # the store's fast path (group commit)
    elif isinstance(op, _Messages):
        await store.append_messages(op.session_id, op.messages)
    elif isinstance(op, _End):
        await store.end_session(op.session_id, reason=op.reason, ended_at=op.ended_at)
    elif isinstance(op, _Usage):
        await store.add_usage(
            op.session_id,
            input=op.input,
            output=op.output,
            cache_read=op.cache_read,
            cache_write=op.cache_write,
            reasoning=op.reasoning,
            api_calls=op.api_calls,
        )
    else:
        await store.record_flush(
            op.session_id,
            timestamp=op.timestamp,
            mode=op.mode,
            saved=op.saved,
            refused=op.refused,
            reply=op.reply,
        )
    return None


async def _drain(store: SessionStore, handle: _File) -> None:
    """Write the journalled writes to the store in order, checkpointing each one.

    Raises:
        SessionStoreError, OSError: the store refused one; the rest stay journalled.
    """
    first = True
    while handle.pending:
        op = handle.writes[handle.applied]
        with fenced(_fence_of(op)):  # each write under the lease it was made under
            if not (first and await _already_stored(store, op)):
                # A conflict: the session was created after all (a refusal that committed).
                with contextlib.suppress(SessionConflictError):
                    await _apply(store, op)
        first = False
        handle.applied += 1
        await anyio.to_thread.run_sync(handle.append, _Applied(count=handle.applied))


def _ours(header: _Header, store: SessionStore) -> bool:
    """Whether a journal's header names `store`: by its identity (the same server, database
    and schema whatever the URL's spelling), or by location for a journal written before."""
    if header.identity is not None:
        return header.identity == store.identity
    return header.location == store.location


FENCED_DIR_NAME = "fenced"
"""Where journals whose writes were fenced off go (under the journal directory), kept for inspection."""


def _fence_out(handle: _File) -> Path:
    """Move a journal whose next write was fenced off into `fenced/` (blocking); its new path."""
    into = handle.path.parent / FENCED_DIR_NAME
    into.mkdir(mode=0o700, exist_ok=True)
    moved = into / handle.path.name
    os.replace(handle.path, moved)
    fsync_dir(handle.path.parent)
    handle.path = moved
    return moved


def _fenced_message(count: int, moved: Path, exc: SessionFencedError) -> str:
    return (
        f"{count} session-store write(s) journalled in {str(moved.parent.parent / moved.name)!r} were made "
        f"under a session lease another worker has taken since ({exc}); they were not stored (they would "
        f"land behind that worker's turn) and are kept in {str(moved)!r} for you to inspect"
    )


async def replay_journals(directory: Path, store: SessionStore, *, warn: Callable[[str], None]) -> int:
    """Write the journals earlier sessions left in `directory` to `store`; returns the writes left.

    Files an active session still holds are left alone (and not counted). A file whose header
    names another store is left in place and reported. A file whose next write another
    worker's lease has fenced off moves to `fenced/` and is reported, never replayed. A
    file is deleted once all its writes are stored.
    """
    paths = await anyio.to_thread.run_sync(_journal_files, directory)
    left = 0
    for path in paths:
        handle = await anyio.to_thread.run_sync(_open_existing, path)
        if handle is None:
            continue
        delete = False
        try:
            header = await anyio.to_thread.run_sync(_read, handle)
            if not _ours(header, store):
                if handle.pending:
                    warn(
                        f"{handle.pending} session-store write(s) in {str(path)!r} were journalled for another "
                        f"store ({header.location}), not this session's ({store.location}); they are left in "
                        "place: run keel with that store's config to replay them"
                    )
                continue
            count = handle.pending
            try:
                await _drain(store, handle)
            except SessionFencedError as exc:
                moved = await anyio.to_thread.run_sync(_fence_out, handle)
                warn(_fenced_message(handle.pending, moved, exc))
                continue
            except (SessionStoreError, OSError) as exc:
                left += handle.pending
                warn(
                    f"{handle.pending} session-store write(s) journalled by an earlier session in "
                    f"{str(path)!r} could not be stored yet ({exc}); they are kept and retried next time"
                )
                continue
            delete = True
            if count:
                warn(f"stored {count} write(s) an earlier session had journalled in {str(path)!r}")
        except ValueError as exc:
            warn(f"{exc}; it is left in place for you to inspect")
        finally:
            await anyio.to_thread.run_sync(partial(handle.close, delete=delete))
    return left


# ---------------------------------------------------------------------------- the writer


class JournalledWriter:
    """A session store's writes, with refused ones journalled durably instead of lost.

    Args:
        store: the session store.
        directory: where journal files go (`<home>/journal`); created 0700 on first use.
        warn: tells the user (a journal started, drained, or could not be written).
        clock: monotonic seconds, for the pause between attempts during an outage.
    """

    def __init__(
        self,
        store: SessionStore,
        directory: Path,
        *,
        warn: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._directory = directory
        self._warn = warn
        self._clock = clock
        self._file: _File | None = None
        self._retry_at = 0.0
        self._pause_s = _FIRST_PAUSE_S
        self._left = 0

    @property
    def pending(self) -> int:
        """Writes journalled and not yet in the store."""
        return 0 if self._file is None else self._file.pending

    @property
    def path(self) -> Path | None:
        """The journal file while this writer holds one."""
        return None if self._file is None else self._file.path

    async def create_session(
        self,
        session_id: str,
        *,
        source: str,
        started_at: float,
        model: str | None,
        parent_session_id: str | None,
        user_id: str,
        memory_snapshot: str | None = None,
    ) -> None:
        op = _Create(
            session_id=session_id,
            source=source,
            started_at=started_at,
            model=model,
            parent_session_id=parent_session_id,
            user_id=user_id,
            memory_snapshot=memory_snapshot,
        )
        await self._write(lambda: (op,))

    async def append_message(
        self, session_id: str, message: StoredMessage, *, usage: StoredUsage | None = None
    ) -> int | None:
        """The row id when the store took the message (and `usage`) now; None when journalled.

        Journalled, the message and the usage are two lines (written and fsynced together)."""

        def ops() -> tuple[_Write, ...]:
            written = _Messages(session_id=session_id, messages=[message])
            return (written,) if usage is None else (written, _usage_op(session_id, usage))

        return await self._write(
            ops,
            lambda: self.store.append_message(session_id, message, usage=usage),  # the store's fast path
        )

    async def append_messages(self, session_id: str, messages: Sequence[StoredMessage]) -> None:
        await self._write(lambda: (_Messages(session_id=session_id, messages=list(messages)),))

    async def end_session(self, session_id: str, *, reason: EndReason, ended_at: float) -> None:
        await self._write(lambda: (_End(session_id=session_id, reason=reason, ended_at=ended_at),))

    async def add_usage(
        self,
        session_id: str,
        *,
        input: int,
        output: int,
        cache_read: int,
        cache_write: int,
        reasoning: int,
        api_calls: int = 1,
    ) -> None:
        usage = StoredUsage(
            input=input,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            reasoning=reasoning,
            api_calls=api_calls,
        )

        async def direct() -> None:
            await self.store.add_usage(session_id, **usage.as_dict())

        await self._write(lambda: (_usage_op(session_id, usage),), direct)

    async def record_flush(
        self,
        session_id: str,
        *,
        timestamp: float,
        mode: FlushMode,
        saved: JsonValue,
        refused: JsonValue,
        reply: str,
    ) -> None:
        op = _Flush(
            session_id=session_id, timestamp=timestamp, mode=mode, saved=saved, refused=refused, reply=reply
        )
        await self._write(lambda: (op,))

    async def settle(self) -> int:
        """Try the journalled writes once more, release the file; returns the writes still journalled.

        The file is deleted when nothing is left; otherwise it stays for the next session
        on this home (`replay_journals`).
        """
        handle = self._file
        if handle is None:
            return 0
        with anyio.CancelScope(shield=True):
            try:
                await _drain(self.store, handle)
            except SessionFencedError as exc:
                await self._fence_out(handle, exc)  # set aside and reported: nothing left to retry
                return 0
            except (SessionStoreError, OSError):
                pass
            left = handle.pending
            await anyio.to_thread.run_sync(partial(handle.close, delete=left == 0))
        self._file = None
        self._left = left
        return left

    @property
    def left_after_settle(self) -> int:
        """What `settle` left journalled (0 before it ran)."""
        return self._left

    # ------------------------------------------------------------------ internals

    async def _write(
        self,
        make: Callable[[], tuple[_Write, ...]],
        direct: Callable[[], Awaitable[int | None]] | None = None,
    ) -> int | None:
        """Apply the writes `make` builds to the store, else journal them; the store's row id
        for a single message it took now.

        `direct` makes the same store call without building the writes: the per-turn writes
        (a message with its reply's usage) go straight in while nothing is journalled, and
        their journal lines — validated, which costs more than the store call — are built
        only when the store refuses them. Without `direct`, `make` builds exactly one write.
        """
        if (
            self._file is not None
            and self._file.pending
            and (self._clock() < self._retry_at or not await self._try_drain())
        ):
            await self._journal(make(), None)
            return None
        try:
            row_id = await (direct() if direct is not None else _apply(self.store, make()[0]))
        except BaseException as exc:
            if not _refused(exc):
                raise
            await self._journal(make(), exc)
            return None
        self._pause_s = _FIRST_PAUSE_S
        return row_id

    async def _try_drain(self) -> bool:
        handle = self._file
        assert handle is not None
        count = handle.pending
        try:
            await _drain(self.store, handle)
        except SessionFencedError as exc:
            await self._fence_out(handle, exc)  # never behind another worker's turn
            return True
        except (SessionStoreError, OSError):
            self._back_off()
            return False
        self._pause_s = _FIRST_PAUSE_S
        self._warn(f"the session store took the {count} journalled write(s); the journal is empty again")
        return True

    async def _fence_out(self, handle: _File, exc: SessionFencedError) -> None:
        """Set the fenced-off rest of the journal aside (reported); this writer starts afresh."""
        count = handle.pending
        with anyio.CancelScope(shield=True):
            moved = await anyio.to_thread.run_sync(_fence_out, handle)
            handle.applied = len(handle.writes)  # nothing of it is written from here on
            await anyio.to_thread.run_sync(partial(handle.close, delete=False))
        self._file = None
        self._warn(_fenced_message(count, moved, exc))

    def _back_off(self) -> None:
        self._retry_at = self._clock() + self._pause_s
        self._pause_s = min(self._pause_s * 2, _MAX_PAUSE_S)

    async def _journal(self, ops: tuple[_Write, ...], exc: BaseException | None) -> None:
        """Append `ops` durably; raises the store's refusal when even the journal fails."""
        try:
            with anyio.CancelScope(shield=True):
                if self._file is None:
                    header = _Header(location=self.store.location, identity=self.store.identity)
                    self._file = await anyio.to_thread.run_sync(_create_file, self._directory, header)
                handle = self._file
                ops = _stamped(ops)
                await anyio.to_thread.run_sync(handle.append, *ops)
                handle.writes.extend(ops)
        except OSError as journal_exc:
            failure = exc if exc is not None else SessionStoreError("the session store is refusing writes")
            raise failure from journal_exc
        if exc is None:
            return
        self._back_off()
        if handle.pending == len(ops):
            self._warn(
                f"the session store refused a write ({exc}); it is journalled in {str(handle.path)!r} "
                "and is written to the store as soon as it takes writes again — nothing is lost"
            )
