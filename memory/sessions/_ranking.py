"""Backend-neutral ranking: from message hits to scored hits, and from hits to ranked sessions.

Message level (both backends' `search` build their results with these): which index
answers a query (`choose_route`), the IDF weight of each term, the rare-term plan that
keeps an OR query inside `RANK_BUDGET`, and the substring routes' results.

Session level — the retrieval strategies behind session_search. A strategy turns a query
into an ordered list of `RankedSession`s, one per lineage root, each anchored on the
message its result window will be centred on:

- `all_terms`: the query as written (implicit AND); first hit per lineage wins.
- `any_terms`: an OR of the meaningful terms ranked by relevance; first hit per lineage wins.
- `best`: the OR query (plus a trigram pass for substrings when words find little), then
  every candidate window is scored by the relevance mass of the hits inside it and by how
  much of the query it covers (`score_windows`) — a result window is what the caller
  reads, so a window where the question's words meet beats one lucky message.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypeAlias, cast

import anyio

from memory.errors import EmbedderError, SessionStoreError
from memory.sessions._fts_query import extract_terms, has_cjk
from memory.sessions._records import IndexFeatures, SearchHit, SearchResult, SearchRoute, StoredRole
from memory.sessions.contract import SessionReader
from memory.sessions.dense.hybrid import DENSE_CANDIDATES, Fused, fuse, route_query

if TYPE_CHECKING:  # the index (and numpy) loads when a dense index is passed in
    from memory.sessions.dense.index import DenseHit, DenseIndex

__all__ = [
    "RANK_BUDGET",
    "TOOL_PREFIX_CHARS",
    "RankedSession",
    "SearchStrategy",
    "choose_route",
    "hit_from_row",
    "idf_weights",
    "like_pattern",
    "rank_sessions",
    "rare_terms",
    "score_windows",
    "substring_result",
]

TOOL_PREFIX_CHARS = 8192
"""Tool results are indexed only up to this many characters: bulky outputs would swamp BM25."""

RANK_BUDGET = 600
"""At most this many matching rows are scored per query (BM25: about 5 µs each).

Beyond it, OR queries draw their rows from the rarest terms (`rare_terms`) and any query
still over budget scores only its newest matches, so latency stays flat as history grows."""


def choose_route(query: str, features: IndexFeatures) -> SearchRoute:
    """The index that can answer `query` best with the indexes this database has."""
    if not features.fts:
        return "like"
    if has_cjk(query):
        terms = extract_terms(query)
        if features.trigram and terms and all(len(t) >= 3 for t in terms):
            return "trigram"
        return "like"
    return "fts"


def idf_weights(terms: Sequence[str], counts: Sequence[int], total: int) -> dict[str, float]:
    """Each term's weight from the number of messages holding it, out of `total`."""
    # BM25's IDF: a term in half the history weighs ~0.7, one in a single message ~ln(N).
    return {t: math.log(1 + (total - n + 0.5) / (n + 0.5)) for t, n in zip(terms, counts, strict=True)}


def rare_terms(terms: Sequence[str], counts: Sequence[int]) -> list[str]:
    """The terms that occur at all — or, in a big history, only the rare ones, in query order.

    BM25 must score every row a query matches, at a cost that grows with the number of
    terms, and an OR over common words matches a large part of a big history. Rare terms
    carry nearly all the weight, so once the document counts of all terms add up to more
    than `RANK_BUDGET`, only the rarest terms that fit are kept (at least one). Callers
    still see which dropped terms each hit holds (`SearchHit.terms`).
    """
    live = [(t, n) for t, n in zip(terms, counts, strict=True) if n > 0]
    rare: list[str] = []
    total = 0
    for term, n in sorted(live, key=lambda pair: pair[1]):
        if rare and total + n > RANK_BUDGET:
            break
        rare.append(term)
        total += n
    keep = set(rare)
    return [t for t, _ in live if t in keep]


def substring_result(route: SearchRoute, terms: list[str], rows: list[tuple[object, ...]]) -> SearchResult:
    """The result of a substring route (`trigram`, `like`) from its rows (see `hit_from_row`)."""
    # LIKE and trigram match substrings, so a case-insensitive substring test says which
    # terms a message holds. No document counts here: every term weighs the same.
    hits = tuple(
        hit_from_row(r, route=route, terms={t for t in terms if t in str(r[5]).lower()}) for r in rows
    )
    return SearchResult(route=route, terms=tuple(terms), weights=dict.fromkeys(terms, 1.0), hits=hits)


def like_pattern(term: str) -> str:
    """A `LIKE`/`ILIKE` pattern (escape character `\\`) matching `term` anywhere."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def hit_from_row(row: tuple[object, ...], *, route: SearchRoute, terms: set[str]) -> SearchHit:
    """A hit from `id, session_id, seq, role, timestamp, content prefix, score`."""
    return SearchHit(
        message_id=int(cast(int, row[0])),
        session_id=str(row[1]),
        seq=int(cast(int, row[2])),
        role=cast(StoredRole, str(row[3])),
        timestamp=float(cast(float, row[4])),
        score=float(cast(float, row[6])),
        route=route,
        terms=frozenset(terms),
    )


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
    lexical_rank: int | None = None
    dense_rank: int | None = None


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
    db: SessionReader,
    query: str,
    *,
    strategy: SearchStrategy,
    limit: int,
    current: str | None,
    window: int = 5,
    dense: DenseIndex | None = None,
    user_ids: Sequence[str] | None = None,
) -> list[RankedSession]:
    """The top `limit` lineages for `query`.

    With `dense` (the `best` strategy only), a query `route_query` does not send to words
    alone also searches by meaning (in `user_ids`' sessions), and the two lists are fused
    (`memory.sessions.dense.hybrid`). The live session `current` is skipped (its messages are in context already), and so is
    the rest of its lineage — except ancestors that ended by compression: their turns were
    summarized away, so searching them is how the agent gets the details back.
    """
    routing = route_query(query) if dense is not None and strategy == "best" else None
    near: list[DenseHit] = []

    async def search_dense(index: DenseIndex) -> None:
        # Meaning is an extra: a broken embedder or vector table leaves the words.
        with contextlib.suppress(EmbedderError, SessionStoreError):
            near.extend(await index.nearest(query, k=DENSE_CANDIDATES, user_ids=user_ids))

    failed: list[SessionStoreError] = []
    scored: list[tuple[SearchHit, float]] = []
    async with anyio.create_task_group() as tg:
        if dense is not None and routing is not None and routing.dense_weight > 0:
            tg.start_soon(search_dense, dense)  # embedding the query overlaps the word search
        try:
            scored = await _lexical(db, query, strategy=strategy, limit=limit, window=window)
        except SessionStoreError as exc:  # raised as itself below, not inside an exception group
            failed.append(exc)
            tg.cancel_scope.cancel()
    if failed:
        raise failed[0]
    if routing is not None and routing.dense_weight > 0:
        ranked = fuse(scored, near, dense_weight=routing.dense_weight)
    else:
        ranked = [
            Fused(h.session_id, h.message_id, h.seq, score, i, None) for i, (h, score) in enumerate(scored, 1)
        ]
    return await _top_lineages(db, ranked, limit=limit, current=current)


async def _lexical(
    db: SessionReader, query: str, *, strategy: SearchStrategy, limit: int, window: int
) -> list[tuple[SearchHit, float]]:
    """The word ranking: message hits (`all_terms`, `any_terms`) or scored windows (`best`), best first."""
    if strategy == "all_terms":
        result = await db.search(query, match="all", limit=CANDIDATES)
        return [(h, h.score) for h in result.hits]
    result = await db.search(query, match="any", limit=CANDIDATES)
    if strategy == "any_terms":
        return [(h, h.score) for h in result.hits]
    hits = list(result.hits)
    if len(hits) < limit and db.features.trigram and result.route == "fts" and result.terms:
        # Few whole-word matches: look for the terms inside longer words too.
        seen = {h.message_id for h in hits}
        extra = await db.search(query, match="any", route="trigram", limit=CANDIDATES)
        # Trigram scores are on another scale; keep them behind every word hit.
        floor = min((h.score for h in hits), default=1.0)
        hits += [replace(h, score=min(h.score, floor) * 0.5) for h in extra.hits if h.message_id not in seen]
    return score_windows(hits, weights=result.weights, window=window)


async def _top_lineages(
    db: SessionReader, ranked: Sequence[Fused], *, limit: int, current: str | None
) -> list[RankedSession]:
    """The best result per lineage root, skipping the live lineage (but not its compressed ancestors)."""
    roots = await db.lineage_roots(sorted({f.session_id for f in ranked}))
    current_root = None if current is None else await db.lineage_root(current)
    compressed: dict[str, bool] = {}
    results: list[RankedSession] = []
    taken: set[str] = set()
    for item in ranked:
        root = roots.get(item.session_id, item.session_id)
        if root in taken or item.session_id == current:
            continue
        if root == current_root:
            if item.session_id not in compressed:
                record = await db.get_session(item.session_id)
                compressed[item.session_id] = record is not None and record.end_reason == "compression"
            if not compressed[item.session_id]:
                continue
        taken.add(root)
        results.append(
            RankedSession(
                item.session_id,
                root,
                item.message_id,
                item.seq,
                item.score,
                lexical_rank=item.lexical_rank,
                dense_rank=item.dense_rank,
            )
        )
        if len(results) == limit:
            break
    return results
