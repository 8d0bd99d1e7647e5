"""From message hits to ranked sessions: the retrieval strategies behind session_search.

A strategy turns a query into an ordered list of `RankedSession`s — one per lineage root,
each anchored on the message its result window will be centred on:

- `all_terms`: FTS5 with the query as written (implicit AND); first hit per lineage wins.
- `any_terms`: an OR of the meaningful terms ranked by BM25; first hit per lineage wins.
- `best`: the OR query (plus a trigram pass for substrings when words find little), then
  every candidate window is scored by the BM25 mass of the hits inside it and by how
  much of the query it covers (`score_windows`) — a result window is what the caller
  reads, so a window where the question's words meet beats one lucky message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from memory.sessions._records import SearchHit
from memory.sessions.contract import SessionStore

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


def score_windows(
    hits: Sequence[SearchHit], *, weights: Mapping[str, float], window: int
) -> list[tuple[SearchHit, float]]:
    """For each session, the hit whose ±`window` neighbourhood makes the best result window.

    A window's score is the BM25 mass of the hits inside it — a neighbour `d` positions
    away counts `1 / (1 + d / 2)` of its score, so the anchor dominates but a cluster of
    matching messages beats a stray one — times `1 + coverage`, where coverage is the
    IDF-weighted share of the query's terms found anywhere in the window (what BM25 on
    one message cannot see: the question's words spread over an exchange).
    Returns (anchor, window score) per session, best first.
    """
    total_weight = sum(weights.values())
    by_session: dict[str, list[SearchHit]] = defaultdict(list)
    for hit in hits:
        by_session[hit.session_id].append(hit)
    best: list[tuple[SearchHit, float]] = []
    for session_hits in by_session.values():
        ordered = sorted(session_hits, key=lambda h: h.seq)
        top: tuple[SearchHit, float] | None = None
        for anchor in ordered:
            mass = 0.0
            covered: set[str] = set()
            for other in ordered:
                distance = abs(other.seq - anchor.seq)
                if distance <= window:
                    mass += other.score / (1 + distance / 2)
                    covered |= other.terms
            coverage = sum(weights.get(t, 0.0) for t in covered) / total_weight if total_weight > 0 else 0.0
            score = mass * (1 + coverage)
            if top is None or score > top[1]:
                top = (anchor, score)
        if top is not None:
            best.append(top)
    best.sort(key=lambda pair: (-pair[1], -pair[0].message_id))
    return best


async def rank_sessions(
    db: SessionStore,
    query: str,
    *,
    strategy: SearchStrategy,
    limit: int,
    current: str | None,
    window: int = 5,
) -> list[RankedSession]:
    """The top `limit` lineages for `query`.

    The live session `current` is skipped (its messages are in context already), and so is
    the rest of its lineage — except ancestors that ended by compression: their turns were
    summarized away, so searching them is how the agent gets the details back.
    """
    if strategy == "all_terms":
        result = await db.search(query, match="all", limit=CANDIDATES)
        scored = [(h, h.score) for h in result.hits]
    elif strategy == "any_terms":
        result = await db.search(query, match="any", limit=CANDIDATES)
        scored = [(h, h.score) for h in result.hits]
    else:
        result = await db.search(query, match="any", limit=CANDIDATES)
        hits = list(result.hits)
        if len(hits) < limit and db.features.trigram and result.route == "fts" and result.terms:
            # Few whole-word matches: look for the terms inside longer words too.
            seen = {h.message_id for h in hits}
            extra = await db.search(query, match="any", route="trigram", limit=CANDIDATES)
            # Trigram scores are on another scale; keep them behind every word hit.
            floor = min((h.score for h in hits), default=1.0)
            hits += [
                replace(h, score=min(h.score, floor) * 0.5) for h in extra.hits if h.message_id not in seen
            ]
        scored = score_windows(hits, weights=result.weights, window=window)
    roots = await db.lineage_roots(sorted({h.session_id for h, _ in scored}))
    current_root = None if current is None else await db.lineage_root(current)
    compressed: dict[str, bool] = {}
    results: list[RankedSession] = []
    taken: set[str] = set()
    for hit, score in scored:
        root = roots.get(hit.session_id, hit.session_id)
        if root in taken or hit.session_id == current:
            continue
        if root == current_root:
            if hit.session_id not in compressed:
                record = await db.get_session(hit.session_id)
                compressed[hit.session_id] = record is not None and record.end_reason == "compression"
            if not compressed[hit.session_id]:
                continue
        taken.add(root)
        results.append(RankedSession(hit.session_id, root, hit.message_id, hit.seq, score))
        if len(results) == limit:
            break
    return results
