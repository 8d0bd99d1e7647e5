"""A user-scoped view of a session store: reads only, of the given users' sessions only.

The `session_search` tool reads through it when it runs for a principal, so an id of
another user's session or message answers exactly as one that does not exist, and ids
cannot be probed. It is a reader, not a store: it has no writes to refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memory.sessions import _records
from memory.sessions.contract import SessionReader
from memory.sessions.reads import ListSessions, SearchMessages, SelectMessages

__all__ = ["UserScopedReader"]


class UserScopedReader(SessionReader):
    """A `SessionReader` that sees only the sessions of `user_ids`.

    Listing and search pass the users into the store's queries (the filter sits before
    any limit); point reads answer another user's session or message as missing.
    `rank_sessions` takes a reader; handing it this one puts the filter inside every
    query it makes.
    """

    def __init__(self, db: SessionReader, user_ids: Sequence[str]) -> None:
        self._db = db
        self._users = tuple(user_ids)

    @property
    def features(self) -> _records.IndexFeatures:
        return self._db.features

    @property
    def location(self) -> str:
        return self._db.location

    async def get_session(self, session_id: str) -> _records.SessionRecord | None:
        record = await self._db.get_session(session_id)
        return record if record is not None and record.user_id in self._users else None

    def _narrowed(self, user_ids: Sequence[str] | None) -> tuple[str, ...]:
        return self._users if user_ids is None else tuple(u for u in user_ids if u in self._users)

    async def select_sessions(self, query: ListSessions) -> list[_records.SessionRecord]:
        return await self._db.select_sessions(replace(query, user_ids=self._narrowed(query.user_ids)))

    async def select_messages(self, query: SelectMessages) -> list[_records.MessageRecord]:
        if await self.get_session(query.session_id) is None:
            return []
        return await self._db.select_messages(query)

    async def get_message(self, message_id: int) -> _records.MessageRecord | None:
        record = await self._db.get_message(message_id)
        if record is None or await self.get_session(record.session_id) is None:
            return None
        return record

    async def anchored_views(
        self, message_ids: Sequence[int], *, window: int = 5, bookend: int = 3
    ) -> list[_records.AnchoredView | None]:
        views = await self._db.anchored_views(message_ids, window=window, bookend=bookend)
        return [v if v is not None and v.session.user_id in self._users else None for v in views]

    async def list_flushes(self, session_id: str) -> list[_records.FlushRecord]:
        return [] if await self.get_session(session_id) is None else await self._db.list_flushes(session_id)

    async def lineage_roots(self, session_ids: Sequence[str]) -> dict[str, str]:
        # Another user's session answers as a missing one does (its own root), and a root
        # this reader cannot see is never told: the lineage as seen here starts at the session.
        roots = await self._db.lineage_roots(session_ids)
        seen: dict[str, bool] = {}

        async def visible(session_id: str) -> bool:
            if session_id not in seen:
                seen[session_id] = await self.get_session(session_id) is not None
            return seen[session_id]

        told: dict[str, str] = {}
        for session_id, root in roots.items():
            shown = root == session_id or (await visible(session_id) and await visible(root))
            told[session_id] = root if shown else session_id
        return told

    async def continuation(self, session_id: str) -> str | None:
        # A child is created with its parent's user, so it is visible exactly when the parent
        # is; both are checked all the same, as for every other read here.
        if await self.get_session(session_id) is None:
            return None
        child = await self._db.continuation(session_id)
        return child if child is not None and await self.get_session(child) is not None else None

    async def search_messages(self, query: SearchMessages) -> _records.SearchResult:
        return await self._db.search_messages(replace(query, user_ids=self._narrowed(query.user_ids)))
