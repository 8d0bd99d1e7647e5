"""From message hits to ranked sessions: the retrieval strategies behind session_search.

A strategy turns a query into an ordered list of `RankedSession`s — one per lineage root,
each anchored on the message its result window will be centred on:

- `all_terms`: FTS5 with the query as written (implicit AND); first hit per lineage wins.
- `any_terms`: an OR of the meaningful terms ranked by BM25; first hit per lineage wins.
- `best`: the OR query (plus a trigram pass for substrings when words find little), then
  every candidate window is scored by the BM25 mass of all hits inside it, weighted by
  distance from the centre — a result window is what the caller reads, so a window where
  several messages match beats one lucky message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from memory._session_records import SearchHit
from memory.sessions import SessionDB

__all__ = ["RankedSession", "SearchStrategy", "rank_sessions", "score_windows"]

SearchStrategy: TypeAlias = Literal["all_terms", "any_terms", "best"]

CANDIDATES = 150
"""Message hits considered per query before grouping."""


@dataclass(frozen=True, slots=True)
class RankedSession:
    """One search result before hydration: where to anchor the window, and how good it is."""

    session_id: str
    root: str
    anchor_id: int
    anchor_seq: int
    score: float


def score_windows(hits: Sequence[SearchHit], *, window: int) -> list[tuple[SearchHit, float]]:
    """For each session, the hit whose ±`window` neighbourhood holds the most BM25 mass.

    A neighbour `d` positions away counts `1 / (1 + d / 2)` of its score, so the anchor
    itself dominates but a cluster of matching messages lifts a window above a stray hit.
    Returns (anchor, window score) per session, best first.
    """
    by_session: dict[str, list[SearchHit]] = defaultdict(list)
    for hit in hits:
        by_session[hit.session_id].append(hit)
    best: list[tuple[SearchHit, float]] = []
    for session_hits in by_session.values():
        ordered = sorted(session_hits, key=lambda h: h.seq)
        top: tuple[SearchHit, float] | None = None
        for anchor in ordered:
            total = 0.0
            for other in ordered:
                distance = abs(other.seq - anchor.seq)
                if distance <= window:
                    total += other.score / (1 + distance / 2)
            if top is None or total > top[1]:
                top = (anchor, total)
        if top is not None:
            best.append(top)
    best.sort(key=lambda pair: (-pair[1], -pair[0].message_id))
    return best


async def rank_sessions(
    db: SessionDB,
    query: str,
    *,
    strategy: SearchStrategy,
    limit: int,
    skip_root: str | None,
    window: int = 5,
) -> list[RankedSession]:
    """The top `limit` lineages for `query`, skipping the lineage rooted at `skip_root`."""
    if strategy == "all_terms":
        scored = [(h, h.score) for h in await db.search(query, match="all", limit=CANDIDATES)]
    elif strategy == "any_terms":
        scored = [(h, h.score) for h in await db.search(query, match="any", limit=CANDIDATES)]
    else:
        hits = await db.search(query, match="any", limit=CANDIDATES)
        if len(hits) < limit and db.features.trigram and hits and hits[0].route == "fts":
            seen = {h.message_id for h in hits}
            extra = await db.search(query, match="any", route="trigram", limit=CANDIDATES)
            # Trigram scores are on another scale; keep them behind every word hit.
            floor = min((h.score for h in hits), default=0.0)
            hits += [_rescale(h, floor) for h in extra if h.message_id not in seen]
        scored = score_windows(hits, window=window)
    roots = await db.lineage_roots(sorted({h.session_id for h, _ in scored}))
    results: list[RankedSession] = []
    taken: set[str] = set()
    for hit, score in scored:
        root = roots.get(hit.session_id, hit.session_id)
        if root in taken or root == skip_root:
            continue
        taken.add(root)
        results.append(RankedSession(hit.session_id, root, hit.message_id, hit.seq, score))
        if len(results) == limit:
            break
    return results


def _rescale(hit: SearchHit, floor: float) -> SearchHit:
    return SearchHit(
        message_id=hit.message_id,
        session_id=hit.session_id,
        seq=hit.seq,
        role=hit.role,
        timestamp=hit.timestamp,
        score=min(hit.score, floor) * 0.5,
        route=hit.route,
    )
