"""Which lineages a prune removes: the rules applied to session rows, the same on every backend."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memory.retention.policy import SessionRetention

__all__ = ["Lineage", "SessionRow", "doomed", "group_lineages"]


@dataclass(frozen=True, slots=True)
class SessionRow:
    """The columns of one session row a prune looks at."""

    id: str
    parent: str | None
    user_id: str
    last_active: float
    messages: int


@dataclass(slots=True)
class Lineage:
    """A session and every session that continued it; `root` keys its lease."""

    root: str
    user_id: str
    last_active: float = 0.0
    messages: int = 0
    session_ids: list[str] = field(default_factory=list)


def _root_of(session_id: str, parents: dict[str, str | None], roots: dict[str, str]) -> str:
    path: list[str] = []
    current = session_id
    while current not in roots:
        parent = parents.get(current)
        if parent is None or parent not in parents or parent in path or parent == current:
            roots[current] = current  # a root, a dangling parent, or a cycle: stop here
            break
        path.append(current)
        current = parent
    root = roots[current]
    for item in path:
        roots[item] = root
    return root


def group_lineages(rows: Iterable[SessionRow]) -> list[Lineage]:
    """The lineages of `rows`, each with its newest activity and its message count."""
    by_id = {row.id: row for row in rows}
    parents = {row.id: row.parent for row in by_id.values()}
    roots: dict[str, str] = {}
    lineages: dict[str, Lineage] = {}
    for row in by_id.values():
        root = _root_of(row.id, parents, roots)
        lineage = lineages.get(root)
        if lineage is None:
            lineage = lineages[root] = Lineage(root, by_id[root].user_id)
        lineage.last_active = max(lineage.last_active, row.last_active)
        lineage.messages += row.messages
        lineage.session_ids.append(row.id)
    return list(lineages.values())


def doomed(lineages: Iterable[Lineage], rules: SessionRetention, *, now: float) -> list[Lineage]:
    """The lineages `rules` remove, oldest first: past the age limit, or past a user's cap."""
    chosen: dict[str, Lineage] = {}
    by_user: dict[str, list[Lineage]] = {}
    for lineage in lineages:
        by_user.setdefault(lineage.user_id, []).append(lineage)
        if rules.max_age_s is not None and lineage.last_active < now - rules.max_age_s:
            chosen[lineage.root] = lineage
    cap = rules.max_messages_per_user
    if cap is not None:
        for own in by_user.values():
            own.sort(key=lambda item: item.last_active, reverse=True)
            kept = 0
            for index, lineage in enumerate(own):
                kept += lineage.messages
                if index > 0 and kept > cap:  # the newest lineage always stays
                    chosen[lineage.root] = lineage
    return sorted(chosen.values(), key=lambda item: item.last_active)
