"""Session reads as values: the three queries that take options, checked once.

`SessionReader.list_sessions`, `get_messages` and `search` (`memory.sessions.contract`) take
their keyword arguments once, turn them into one of these frozen values and hand it to the
backend's narrow method (`select_sessions`, `select_messages`, `search_messages`): the
defaults, the clamping of limits and the user-filter check live here, so a backend only
turns a value into SQL, and a wrapping reader (`_scoped.py`) narrows a value instead of
repeating a signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memory.sessions._records import MatchMode, SearchRoute, StoredRole
from memory.sessions._validate import check_user_ids

__all__ = ["ListSessions", "SearchMessages", "SelectMessages", "SessionOrder", "roles_of"]

SessionOrder = Literal["started", "last_active"]
"""How sessions are listed: newest first by start time, or by last activity."""


def roles_of(roles: Sequence[StoredRole] | None) -> tuple[StoredRole, ...] | None:
    """A role filter as a tuple (None: every role)."""
    return None if roles is None else tuple(roles)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListSessions:
    """Sessions newest first (`order`), `limit` of them after `offset`, none of `exclude`;
    only those of `user_ids` unless it is None (the operator's view). The user filter is
    part of the query, before the limit."""

    limit: int = 50
    offset: int = 0
    order: SessionOrder = "started"
    exclude: tuple[str, ...] = ()
    user_ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", max(0, self.limit))
        object.__setattr__(self, "offset", max(0, self.offset))
        object.__setattr__(self, "user_ids", check_user_ids(self.user_ids))


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectMessages:
    """A session's messages in order, from `start_seq`, at most `limit` (None: all);
    `from_end` takes the *last* `limit` (still returned oldest first); `roles` keeps those."""

    session_id: str
    start_seq: int = 0
    limit: int | None = None
    from_end: bool = False
    roles: tuple[StoredRole, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchMessages:
    """Messages matching `query`, best first, at most `limit` (at least one).

    `match`: `all` — the query as written (implicit AND, OR/NOT, "phrases", prefix*);
    `any` — an OR of its meaningful terms. `route` forces an index (`fts`, `trigram`,
    `like`; one the store lacks falls back); None chooses. `roles`: only those (None:
    all). `user_ids`: only messages of those users' sessions (None: everyone's); the filter
    is part of the query, so other users' rows never take up places.
    """

    query: str
    match: MatchMode = "all"
    route: SearchRoute | None = None
    roles: tuple[StoredRole, ...] | None = ("user", "assistant")
    limit: int = 300
    user_ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", max(1, self.limit))
        object.__setattr__(self, "user_ids", check_user_ids(self.user_ids))
