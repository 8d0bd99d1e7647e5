"""Ranking facts: hybrid search, and the HRR queries (probe, related, reason, contradict).

`search` takes FTS5 candidates (the query's content words OR-joined; CJK through a
substring supplement), then scores each one

    relevance = w_hrr · hrr + w_fts · fts + w_jaccard · jaccard       (default 0.40 / 0.35 / 0.25)
    score     = relevance × trust × decay

where `fts` is the bm25 rank scaled so the best candidate is 1, `jaccard` the token overlap
of query and fact (content and tags), and `hrr` the similarity of the query's text vector to
the fact's content (the fact vector unbound from the content role), mapped to [0, 1].
Without numpy the weights fall back to 0.6 / 0.4 / 0. `decay` halves a fact's score every
`half_life_days` since its last update (off by default). Facts under `min_trust` are never
returned.

The entity queries read the fact vectors algebraically: a fact's vector contains
bind(atom(entity), ROLE_ENTITY) for each entity it names, so its similarity to that key is
high (≈ 0.3–0.7 depending on how many members it bundles) and ≈ 0 otherwise. Without
numpy they fall back to the entity table and keyword search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from memory.providers._text import cjk_like_terms, fts_terms, jaccard, jaccard_tokens
from memory.providers.holographic.contract import Category, Fact, FactBackend

if TYPE_CHECKING:
    from memory.providers.holographic.hrr import HrrCodec, Vector

__all__ = [
    "FTS_ONLY_WEIGHTS",
    "LEXICAL_WEIGHTS",
    "Contradiction",
    "RetrievalWeights",
    "Retriever",
    "ScoredFact",
]


@dataclass(frozen=True, slots=True)
class RetrievalWeights:
    """How much each signal counts in `search` relevance.

    The defaults are the described design — 40 HRR / 35 FTS / 25 Jaccard: meaning-ish
    similarity of the HRR text vectors first, then bm25, then plain token overlap.
    """

    fts: float = 0.35
    jaccard: float = 0.25
    hrr: float = 0.4
    kind: Literal["retrieval_weights"] = "retrieval_weights"

    def __post_init__(self) -> None:
        values = (self.fts, self.jaccard, self.hrr)
        if any(not math.isfinite(v) or v < 0 for v in values) or sum(values) <= 0:
            raise ValueError(f"retrieval weights must be finite, non-negative and not all 0, got {values!r}")


LEXICAL_WEIGHTS = RetrievalWeights(fts=0.6, jaccard=0.4, hrr=0.0)
"""The weights used when numpy (and so HRR) is unavailable."""

FTS_ONLY_WEIGHTS = RetrievalWeights(fts=1.0, jaccard=0.0, hrr=0.0)
"""Plain bm25 order (the baseline the recall benchmark compares against)."""


@dataclass(frozen=True, slots=True)
class ScoredFact:
    """A fact with the score it was ranked by (higher is better)."""

    fact: Fact
    score: float
    kind: Literal["scored_fact"] = "scored_fact"


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Two facts about the same entities whose contents disagree (or at least differ)."""

    first: Fact
    second: Fact
    score: float
    shared_entities: tuple[str, ...]
    kind: Literal["contradiction"] = "contradiction"


class Retriever:
    """Ranks facts from a `FactBackend` (SQLite or PostgreSQL). Synchronous: call it from a worker thread.

    Args:
        store: the fact store.
        weights: relevance weights when HRR vectors are available.
        lexical_weights: relevance weights without them (numpy off or missing).
        candidate_factor: FTS candidates fetched per result wanted.
        half_life_days: temporal decay of scores by age since update; 0 turns it off.
        match_threshold: the HRR similarity a fact needs to count as naming an entity.
        now: wall-clock seconds (for the decay).
    """

    def __init__(
        self,
        store: FactBackend,
        *,
        weights: RetrievalWeights | None = None,
        lexical_weights: RetrievalWeights = LEXICAL_WEIGHTS,
        candidate_factor: int = 3,
        half_life_days: float = 0.0,
        match_threshold: float = 0.12,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._codec: HrrCodec | None = store.codec
        chosen = weights or RetrievalWeights()
        self.weights = chosen if self._codec is not None else lexical_weights
        self._candidate_factor = max(1, candidate_factor)
        self._half_life_s = half_life_days * 86_400.0
        self._match_threshold = match_threshold
        self._now = now

    @property
    def uses_hrr(self) -> bool:
        return self._codec is not None and self.weights.hrr > 0

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        *,
        category: Category | None = None,
        min_trust: float = 0.3,
        limit: int = 10,
        count_retrieval: bool = False,
    ) -> list[ScoredFact]:
        """The `limit` best facts for `query`, best first."""
        pool = limit * self._candidate_factor
        fts_scores: dict[int, float] = {}
        facts: dict[int, Fact] = {}
        ranked = self._store.fts_candidates(
            fts_terms(query), category=category, min_trust=min_trust, limit=pool
        )
        best = max((abs(rank) for _, rank in ranked), default=0.0)
        for fact, rank in ranked:
            facts[fact.fact_id] = fact
            fts_scores[fact.fact_id] = abs(rank) / best if best > 0 else 1.0
        like = self._store.like_candidates(
            cjk_like_terms(query), category=category, min_trust=min_trust, limit=pool
        )
        for fact, fraction in like:
            facts.setdefault(fact.fact_id, fact)
            fts_scores[fact.fact_id] = max(fts_scores.get(fact.fact_id, 0.0), 1.0 if fraction >= 1.0 else 0.5)
        if not facts:
            return []

        weights = self.weights
        query_tokens = jaccard_tokens(query)
        hrr_scores = self._hrr_scores(query, list(facts)) if self.uses_hrr else {}
        scored: list[ScoredFact] = []
        for fact_id, fact in facts.items():
            overlap = jaccard(query_tokens, jaccard_tokens(f"{fact.content} {fact.tags}"))
            relevance = (
                weights.fts * fts_scores[fact_id]
                + weights.jaccard * overlap
                + weights.hrr * hrr_scores.get(fact_id, 0.5)
            )
            scored.append(ScoredFact(fact=fact, score=relevance * fact.trust * self._decay(fact)))
        scored.sort(key=lambda s: s.score, reverse=True)  # stable: ties keep bm25 order
        top = scored[:limit]
        if count_retrieval:
            self._store.mark_retrieved([s.fact.fact_id for s in top])
        return top

    def _hrr_scores(self, query: str, fact_ids: Sequence[int]) -> dict[int, float]:
        codec = self._codec
        assert codec is not None
        vectors = self._store.vectors(fact_ids)
        if not vectors:
            return {}
        ids = list(vectors)
        # Unbinding the content role from a fact leaves its text vector plus noise from the
        # entity members, so this compares the query's words with the fact's words.
        contents = codec.unbind(codec.stack([vectors[i] for i in ids]), codec.role_content)
        sims = codec.similarities(contents, codec.encode_text(query))
        return {fact_id: (sim + 1.0) / 2.0 for fact_id, sim in zip(ids, sims, strict=True)}

    def _decay(self, fact: Fact) -> float:
        if self._half_life_s <= 0:
            return 1.0
        age = max(0.0, self._now() - (fact.updated_at or fact.created_at))
        return float(0.5 ** (age / self._half_life_s))

    # ------------------------------------------------------------------ entity queries

    def probe(
        self, entity: str, *, category: Category | None = None, min_trust: float = 0.3, limit: int = 10
    ) -> list[ScoredFact]:
        """Facts that name `entity` as an entity, then keyword matches to fill up `limit`.

        With vectors, "names it" means its role-bound atom is in the fact's vector; without,
        the entity table. Single capitalized words are not extracted as entities, so the
        keyword fill is what finds "Caroline".
        """
        keyword = self.search(entity, category=category, min_trust=min_trust, limit=limit)
        if self._codec is None:
            linked = [f for f in self._store.facts_by_entity(entity, min_trust=min_trust) if _in(f, category)]
            return self._merge([ScoredFact(fact=f, score=f.trust) for f in linked], keyword, limit)
        codec = self._codec
        key = codec.entity_key(entity)
        named = self._by_similarity(
            codec, lambda matrix: codec.similarities(matrix, key), category, min_trust, limit
        )
        return self._merge(named, keyword, limit)

    def related(
        self, entity: str, *, category: Category | None = None, min_trust: float = 0.3, limit: int = 10
    ) -> list[ScoredFact]:
        """Facts that name `entity` as an entity or mention its words in their content."""
        if self._codec is None:
            return self.search(entity, category=category, min_trust=min_trust, limit=limit)
        codec = self._codec
        key = codec.entity_key(entity)
        words = codec.encode_text(entity)

        def sims(matrix: Vector) -> list[float]:
            as_entity = codec.similarities(matrix, key)
            in_content = codec.similarities(codec.unbind(matrix, codec.role_content), words)
            return [max(a, b) for a, b in zip(as_entity, in_content, strict=True)]

        return self._by_similarity(codec, sims, category, min_trust, limit)

    def reason(
        self,
        entities: Sequence[str],
        *,
        category: Category | None = None,
        min_trust: float = 0.3,
        limit: int = 10,
    ) -> list[ScoredFact]:
        """Facts that name every one of `entities` (AND: the weakest match decides)."""
        names = [e for e in (e.strip() for e in entities) if e]
        if not names:
            return []
        if self._codec is None:
            sets = [
                {f.fact_id: f for f in self._store.facts_by_entity(n, min_trust=min_trust)} for n in names
            ]
            common = set(sets[0]).intersection(*sets[1:])
            facts = [sets[0][i] for i in common if _in(sets[0][i], category)]
            facts.sort(key=lambda f: f.trust, reverse=True)
            return [ScoredFact(fact=f, score=f.trust) for f in facts[:limit]]
        codec = self._codec
        keys = [codec.entity_key(n) for n in names]

        def sims(matrix: Vector) -> list[float]:
            per_key = [codec.similarities(matrix, k) for k in keys]
            return [min(column) for column in zip(*per_key, strict=True)]

        return self._by_similarity(codec, sims, category, min_trust, limit)

    def contradict(
        self, *, category: Category | None = None, threshold: float = 0.3, limit: int = 10
    ) -> list[Contradiction]:
        """Pairs of recent facts that share entities but say different things.

        Over the 500 most recently updated facts: for each pair whose entity sets overlap
        (Jaccard ≥ 0.3), contradiction = overlap × (1 − content similarity), where the
        similarity is that of the two contents' text vectors mapped to [0, 1] (token Jaccard
        without numpy). Unrelated contents score 0.5 × overlap, paraphrases near 0.
        """
        facts = [f for f in self._store.recent_facts(category=category, limit=500) if f.entities]
        if len(facts) < 2:
            return []
        entity_sets = [{e.casefold() for e in f.entities} for f in facts]
        codec = self._codec
        # Compare the contents alone: the whole fact vectors share their common entity
        # members, which would make every pair about the same entity look alike.
        texts = [codec.encode_text(f.content) for f in facts] if codec is not None else []
        tokens = [jaccard_tokens(f.content) for f in facts] if codec is None else []
        found: list[Contradiction] = []
        for i in range(len(facts)):
            for j in range(i + 1, len(facts)):
                shared = entity_sets[i] & entity_sets[j]
                if not shared:
                    continue
                overlap = len(shared) / len(entity_sets[i] | entity_sets[j])
                if overlap < 0.3:
                    continue
                if codec is not None:
                    same = (codec.similarity(texts[i], texts[j]) + 1.0) / 2.0
                else:
                    same = jaccard(tokens[i], tokens[j])
                score = overlap * (1.0 - same)
                if score >= threshold:
                    names = tuple(e for e in facts[i].entities if e.casefold() in shared)
                    found.append(
                        Contradiction(first=facts[i], second=facts[j], score=score, shared_entities=names)
                    )
        found.sort(key=lambda c: c.score, reverse=True)
        return found[:limit]

    # ------------------------------------------------------------------ helpers

    def _by_similarity(
        self,
        codec: HrrCodec,
        sims_of: Callable[[Vector], list[float]],
        category: Category | None,
        min_trust: float,
        limit: int,
    ) -> list[ScoredFact]:
        facts = self._store.recent_facts(category=category, min_trust=min_trust, limit=1_000_000)
        vectors = self._store.vectors([f.fact_id for f in facts])
        with_vectors = [f for f in facts if f.fact_id in vectors]
        if not with_vectors:
            return []
        sims = sims_of(codec.stack([vectors[f.fact_id] for f in with_vectors]))
        scored = [
            ScoredFact(fact=f, score=(s + 1.0) / 2.0 * f.trust)
            for f, s in zip(with_vectors, sims, strict=True)
            if s >= self._match_threshold
        ]
        scored.sort(key=lambda s: s.score, reverse=True)
        return scored[:limit]

    @staticmethod
    def _merge(first: Sequence[ScoredFact], then: Sequence[ScoredFact], limit: int) -> list[ScoredFact]:
        out = list(first)
        seen = {s.fact.fact_id for s in first}
        out.extend(s for s in then if s.fact.fact_id not in seen)
        return out[:limit]


def _in(fact: Fact, category: Category | None) -> bool:
    return category is None or fact.category == category
