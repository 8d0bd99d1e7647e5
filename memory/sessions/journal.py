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
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Literal, TypeAlias

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from memory._atomic import fsync_dir
from memory.errors import SessionConflictError, SessionFencedError, SessionQueryError, SessionStoreError
from memory.sessions.contract import SessionStore, SessionWriter
from memory.sessions.writes import (
    AddUsage,
    AppendMessages,
    CreateSession,
    EndSession,
    RecordFlush,
    SessionWrite,
    WriteResult,
    current_fence,
    fenced,
    stamped,
)

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


_Line: TypeAlias = Annotated[
    _Header | _Applied | CreateSession | AppendMessages | EndSession | AddUsage | RecordFlush,
    Field(discriminator="kind"),
]
_LINE = TypeAdapter[_Line](_Line)


# Refusals the journal keeps; a caller's mistake (a duplicate id, a bad query) is raised as is,
# and so is a fenced write: the lease went to another worker, so it must never land later.
_CALLER_ERRORS = (SessionConflictError, SessionQueryError, SessionFencedError)


def _refused(exc: BaseException) -> bool:
    return isinstance(exc, SessionStoreError | OSError) and not isinstance(exc, _CALLER_ERRORS)


# ---------------------------------------------------------------------------- the file


@dataclass(slots=True)
class _File:
    """An open journal file: its path, its descriptor (flock held), and its writes."""

    path: Path
    fd: int
    writes: list[SessionWrite]
    applied: int

    @property
    def pending(self) -> int:
        return len(self.writes) - self.applied

    def append(self, *lines: _Header | _Applied | SessionWrite) -> None:
        """Write `lines` and fsync once."""
        data = b"".join(_LINE.dump_json(line) + b"\n" for line in lines)
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


async def _already_stored(store: SessionStore, op: SessionWrite) -> bool:
    """Whether `op` reached the store before a crash or a false refusal."""
    if isinstance(op, CreateSession):
        return await store.get_session(op.session_id) is not None
    if isinstance(op, EndSession):
        session = await store.get_session(op.session_id)
        return session is not None and session.ended_at is not None
    if isinstance(op, AppendMessages):
        tail = await store.get_messages(op.session_id, limit=len(op.messages), from_end=True)
        stored = [(r.message.role, r.message.timestamp) for r in tail]
        return stored == [(m.role, m.timestamp) for m in op.messages]
    return False


async def _drain(store: SessionStore, handle: _File) -> None:
    """Write the journalled writes to the store in order, checkpointing each one.

    Raises:
        SessionStoreError, OSError: the store refused one; the rest stay journalled.
    """
    first = True
    while handle.pending:
        op = handle.writes[handle.applied]
        with fenced(op.fence):  # each write under the lease it was made under
            if not (first and await _already_stored(store, op)):
                # A conflict: the session was created after all (a refusal that committed).
                with contextlib.suppress(SessionConflictError):
                    await store.apply(op)
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


class JournalledWriter(SessionWriter):
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

    async def apply(self, write: SessionWrite) -> WriteResult:
        """Write to the store, else journal: the store's result, or None when journalled.

        While the journal holds writes, they are replayed first (in order) and `write`
        follows them; a write the store refuses joins the journal, with the fence it was
        made under. The keyword methods (`append_message`, ...) come from `SessionWriter`
        and answer from this result (no id, `[]`, `False` or 0 for a journalled write).
        """
        if (
            self._file is not None
            and self._file.pending
            and (self._clock() < self._retry_at or not await self._try_drain())
        ):
            await self._journal(write, None)
            return None
        try:
            result = await self.store.apply(write)
        except BaseException as exc:
            if not _refused(exc):
                raise
            await self._journal(write, exc)
            return None
        self._pause_s = _FIRST_PAUSE_S
        return result

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

    async def _journal(self, write: SessionWrite, exc: BaseException | None) -> None:
        """Append `write` durably; raises the store's refusal when even the journal fails."""
        try:
            with anyio.CancelScope(shield=True):
                if self._file is None:
                    header = _Header(location=self.store.location, identity=self.store.identity)
                    self._file = await anyio.to_thread.run_sync(_create_file, self._directory, header)
                handle = self._file
                write = stamped(write, current_fence())
                await anyio.to_thread.run_sync(handle.append, write)
                handle.writes.append(write)
        except OSError as journal_exc:
            failure = exc if exc is not None else SessionStoreError("the session store is refusing writes")
            raise failure from journal_exc
        if exc is None:
            return
        self._back_off()
        if handle.pending == 1:
            self._warn(
                f"the session store refused a write ({exc}); it is journalled in {str(handle.path)!r} "
                "and is written to the store as soon as it takes writes again — nothing is lost"
            )
