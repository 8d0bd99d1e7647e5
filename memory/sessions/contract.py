"""The session-store contract: `SessionReader`, `SessionWriter`, and `SessionStore` (both, plus lifecycle).

Two backends implement `SessionStore`: `SessionDB` (SQLite with FTS5, `<home>/state.db`,
the embedded default; `memory.sessions.sqlite`) and `PgSessionStore` (PostgreSQL through
psycopg 3; `memory.sessions.postgres`). Code outside `memory.sessions` names these
protocols, never a backend, so either can be plugged in — and asks for the narrowest one:
the `session_search` tool and a user-scoped view only read (`SessionReader`); the turn
loop's recorder writes.

Every session carries a `user_id` (the principal it ran for; `""` is the default
single-user principal). `list_sessions` and `search` take `user_ids`: `None` means no
filter (the operator's view), otherwise only sessions of those users are returned, and the
filter is applied inside the query, before any limit, so another user's rows can neither
show up nor crowd the caller's own out. Point reads (`get_session`, `get_messages`, ...)
are by id and not filtered: a caller that hands out ids checks `SessionRecord.user_id`
(`memory.sessions` does it for the tool with a scoped reader).

**Fencing.** A session lease that can be lost without its holder hearing of it (a
PostgreSQL advisory lock dies with its connection) fences the writes made under it: taking
it bumps a token and names the holder, `fenced(Fence(...))` marks the holder's task, and a
store that keeps fences refuses, in the same transaction as the write, a write made under
a token another holder has taken the lease after (`SessionFencedError`). The holder's own
later tokens do not fence its earlier writes: a journal its outage left is still replayed
once the server is back, unless another worker ran a turn meanwhile. A task context carries the fence (a `ContextVar`) because
the writes are made deep below the lease, by the recorder and the journal; tasks a turn
starts inherit it, tasks started before it do not. `Fence` and `fenced` live with the
write values (`memory.sessions.writes`).

Methods are coroutines. Errors are `memory.errors.SessionStoreError` subclasses; invalid
arguments (an unknown role, an empty id) raise `ValueError` before anything is written.
See `SessionDB` for the full description of each method.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self

from pydantic import JsonValue

from memory.sessions._records import (
    AnchoredView,
    EndReason,
    FlushMode,
    FlushRecord,
    IndexFeatures,
    MatchMode,
    MessageRecord,
    SearchResult,
    SearchRoute,
    SessionRecord,
    StoredMessage,
    StoredRole,
    StoredUsage,
)
from memory.sessions._validate import check_user_ids
from memory.sessions.reads import ListSessions, SearchMessages, SelectMessages, SessionOrder, roles_of
from memory.sessions.writes import (
    AddUsage,
    CreateSession,
    EndSession,
    RecordFlush,
    SessionWrite,
    WriteResult,
    appended,
)

__all__ = ["SessionReader", "SessionStore", "SessionWriter"]


class SessionReader(Protocol):
    """What reading sessions needs: point reads, listing, lineage, search.

    The keyword methods (`list_sessions`, `get_messages`, `search`, `anchored_view`,
    `lineage_root`) are written here once on top of narrow ones that take a read value
    (`memory.sessions.reads`) or a batch; a backend subclasses this protocol to get them.
    """

    @property
    def features(self) -> IndexFeatures:
        """The indexes searches can use (`trigram` gates the substring pass of `best`)."""
        ...

    @property
    def location(self) -> str:
        """Where the store lives, for messages: a file path, or a URL without its password."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or None."""
        ...

    async def select_sessions(self, query: ListSessions) -> list[SessionRecord]:
        """`list_sessions` with its options as one value."""
        ...

    async def list_sessions(
        self,
        limit: int = 50,
        offset: int = 0,
        *,
        order: SessionOrder = "started",
        exclude: Sequence[str] = (),
        user_ids: Sequence[str] | None = None,
    ) -> list[SessionRecord]:
        """Sessions newest first; only those of `user_ids` unless it is None."""
        users = check_user_ids(user_ids)
        return await self.select_sessions(
            ListSessions(limit=limit, offset=offset, order=order, exclude=tuple(exclude), user_ids=users)
        )

    async def select_messages(self, query: SelectMessages) -> list[MessageRecord]:
        """`get_messages` with its options as one value."""
        ...

    async def get_messages(
        self,
        session_id: str,
        *,
        start_seq: int = 0,
        limit: int | None = None,
        from_end: bool = False,
        roles: Sequence[StoredRole] | None = None,
    ) -> list[MessageRecord]:
        """A session's messages in order (see `SelectMessages`)."""
        return await self.select_messages(
            SelectMessages(
                session_id=session_id,
                start_seq=start_seq,
                limit=limit,
                from_end=from_end,
                roles=roles_of(roles),
            )
        )

    async def get_message(self, message_id: int) -> MessageRecord | None:
        """One message by id, or None."""
        ...

    async def anchored_view(
        self, message_id: int, *, window: int = 5, bookend: int = 3
    ) -> AnchoredView | None:
        """The message, `window` visible messages each side and `bookend` at each end of its
        session, or None."""
        (view,) = await self.anchored_views((message_id,), window=window, bookend=bookend)
        return view

    async def anchored_views(
        self, message_ids: Sequence[int], *, window: int = 5, bookend: int = 3
    ) -> list[AnchoredView | None]:
        """`anchored_view` for several messages in one call."""
        ...

    async def list_flushes(self, session_id: str) -> list[FlushRecord]:
        """A session's flush records, oldest first."""
        ...

    async def lineage_root(self, session_id: str) -> str:
        """The first ancestor of `session_id` (itself if it has no parent); safe on cycles."""
        return (await self.lineage_roots((session_id,)))[session_id]

    async def lineage_roots(self, session_ids: Sequence[str]) -> dict[str, str]:
        """`lineage_root` for many sessions in one call."""
        ...

    async def continuation(self, session_id: str) -> str | None:
        """The session a compression continued `session_id` in (its newest child), or None."""
        ...

    async def search_messages(self, query: SearchMessages) -> SearchResult:
        """`search` with its options as one value."""
        ...

    async def search(
        self,
        query: str,
        *,
        match: MatchMode = "all",
        route: SearchRoute | None = None,
        roles: Sequence[StoredRole] | None = ("user", "assistant"),
        limit: int = 300,
        user_ids: Sequence[str] | None = None,
    ) -> SearchResult:
        """Messages matching `query`, best first; any text is accepted as a query (see
        `SearchMessages`). `user_ids` keeps only messages of those users' sessions (None: everyone's).
        """
        users = check_user_ids(user_ids)
        return await self.search_messages(
            SearchMessages(
                query=query, match=match, route=route, roles=roles_of(roles), limit=limit, user_ids=users
            )
        )


class SessionWriter(Protocol):
    """What recording sessions needs: one method, `apply`, for every write value
    (`memory.sessions.writes`), and the keyword methods callers know, written here once on
    top of it (a backend subclasses this protocol to get them)."""

    async def apply(self, write: SessionWrite) -> WriteResult:
        """Run one write in one transaction; see `WriteResult` for what comes back.

        Raises:
            SessionConflictError: `CreateSession` of an id that is taken.
            SessionNotFoundError: the session (or the parent) does not exist.
            SessionFencedError: the write's lease was taken by another worker since.
        """
        ...

    async def create_session(
        self,
        session_id: str,
        *,
        source: str,
        started_at: float,
        model: str | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        user_id: str = "",
        memory_snapshot: str | None = None,
    ) -> None:
        """Record a new session for `user_id` (see `CreateSession`)."""
        await self.apply(
            CreateSession(
                session_id=session_id,
                source=source,
                started_at=started_at,
                model=model,
                parent_session_id=parent_session_id,
                title=title,
                user_id=user_id,
                memory_snapshot=memory_snapshot,
            )
        )

    async def end_session(self, session_id: str, *, reason: EndReason, ended_at: float) -> bool:
        """Mark a session ended; False (changing nothing) if it had already ended."""
        return bool(await self.apply(EndSession(session_id=session_id, reason=reason, ended_at=ended_at)))

    async def append_message(
        self, session_id: str, message: StoredMessage, *, usage: StoredUsage | None = None
    ) -> int | None:
        """Append one message; return its id (unique in the store, increasing with time), or
        None from a writer that journalled it instead (`memory.sessions.journal`).

        `usage` (the reply's, usually) is added to the session's counters in the same
        transaction: all of it is stored, or none.
        """
        ids = await self.append_messages(session_id, (message,), usage=usage)
        return ids[0] if ids else None

    async def append_messages(
        self, session_id: str, messages: Sequence[StoredMessage], *, usage: StoredUsage | None = None
    ) -> list[int]:
        """Append several messages in one transaction (all or none); return their ids."""
        ids = await self.apply(appended(session_id, messages, usage))
        return ids if isinstance(ids, list) else []

    async def add_usage(
        self,
        session_id: str,
        *,
        input: int = 0,
        output: int = 0,
        cache_read: int = 0,
        cache_write: int = 0,
        reasoning: int = 0,
        api_calls: int = 1,
    ) -> None:
        """Add one reply's usage to the session's counters."""
        await self.apply(
            AddUsage(
                session_id=session_id,
                input=input,
                output=output,
                cache_read=cache_read,
                cache_write=cache_write,
                reasoning=reasoning,
                api_calls=api_calls,
            )
        )

    async def record_flush(
        self,
        session_id: str,
        *,
        timestamp: float,
        mode: FlushMode,
        saved: JsonValue,
        refused: JsonValue,
        reply: str,
    ) -> int:
        """Log a memory flush; return its id."""
        flush = RecordFlush(
            session_id=session_id, timestamp=timestamp, mode=mode, saved=saved, refused=refused, reply=reply
        )
        flush_id = await self.apply(flush)
        return flush_id if isinstance(flush_id, int) else 0


class SessionStore(SessionReader, SessionWriter, Protocol):
    """An open session store: a reader and a writer that holds connections until closed (a
    backend subclasses this protocol for the keyword methods and `async with`)."""

    @property
    def identity(self) -> str:
        """Which store this is, whatever the path or URL spelling that reached it (a resolved
        file path; a server's system identifier, database and schema): journals are keyed by it."""
        ...

    async def aclose(self) -> None:
        """Release the connection(s); calls already running finish first."""
        ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
