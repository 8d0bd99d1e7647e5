"""Ranking memories for a query: meaning first, words second.

    score = w · (cos(q, m) − α · hub(m)) + (1 − w) · bm25(q, m) / max bm25      (w = 0.6, α = 0.75)

- `cos` is the dot product of the unit embeddings of the query and the memory.
- `hub(m)` is the memory's mean similarity to its 10 nearest other memories. Short generic
  sentences ("Cool! What did it look like?") sit close to everything and would otherwise
  top every search; subtracting their neighbourhood (the CSLS correction from cross-lingual
  retrieval) lets specific memories win. On LoCoMo it is worth about a point of recall@5.
- `bm25` ranks the memories that share a word with the query (FTS5, Porter-stemmed, the
  query's content words OR-joined), scaled so the best is 1. Words that occur in more than
  a fifth of all memories are left out of that query: they say little about which memory
  is meant, and in a small store one shared common word ("use" in "what does the user use
  for testing?" and "uses dark mode") would outweigh what the sentences mean.
- Candidates are the 30 best by adjusted similarity plus the 40 best by bm25.

The weights were chosen on the LoCoMo dev conversations (`benchmarks/recall_locomo.py`
prints the table); they are data in `SearchTuning`, not constants in the code.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from memory.providers._text import fts_terms
from memory.providers.semantic.contract import Memory, SemanticBackend
from memory.providers.semantic.embedder import Embedder

__all__ = ["Hit", "Ranker", "SearchTuning"]

_HUB_CHUNK = 512


@dataclass(frozen=True, slots=True)
class SearchTuning:
    """The knobs of `Ranker.search` (see the module docstring)."""

    dense_weight: float = 0.6
    hub_penalty: float = 0.75
    hub_neighbors: int = 10
    common_term_ratio: float = 0.2
    dense_pool: int = 30
    lexical_pool: int = 40
    kind: Literal["search_tuning"] = "search_tuning"

    def __post_init__(self) -> None:
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError(f"dense_weight must be within [0, 1], got {self.dense_weight!r}")
        if self.hub_penalty < 0 or self.hub_neighbors < 1 or self.dense_pool < 1 or self.lexical_pool < 1:
            raise ValueError("hub_penalty must be ≥ 0 and hub_neighbors, dense_pool, lexical_pool ≥ 1")


@dataclass(frozen=True, slots=True)
class Hit:
    """A memory and why it ranked: `score` orders hits, `similarity` is the plain cosine."""

    memory: Memory
    score: float
    similarity: float
    lexical: float
    kind: Literal["semantic_hit"] = "semantic_hit"


def _top_neighbours(
    rows: NDArray[np.float32], matrix: NDArray[np.float32], offset: int, k: int
) -> NDArray[np.float32]:
    """For `rows` (which are `matrix[offset:offset + len(rows)]`), the `k` largest similarities to other rows."""
    sims = rows @ matrix.T
    index = np.arange(sims.shape[0])
    sims[index, index + offset] = -np.inf  # not its own neighbour
    n = matrix.shape[0]
    top: NDArray[np.float32] = np.partition(sims, n - k, axis=1)[:, n - k :]
    return top


def _all_top(matrix: NDArray[np.float32], k: int) -> NDArray[np.float32]:
    n = matrix.shape[0]
    parts = [
        _top_neighbours(matrix[start : start + _HUB_CHUNK], matrix, start, k)
        for start in range(0, n, _HUB_CHUNK)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, k), dtype=np.float32)


def hubness(matrix: NDArray[np.float32], neighbors: int) -> NDArray[np.float32]:
    """Each row's mean similarity to its `neighbors` most similar other rows (0 when alone)."""
    n = matrix.shape[0]
    k = min(neighbors, n - 1)
    if k < 1:
        return np.zeros(n, dtype=np.float32)
    return _means(_all_top(matrix, k))


class _HubIndex:
    """Hubness kept up to date as memories are added: O(added × N) instead of O(N²) per write.

    It keeps each row's `k` best neighbour similarities. When the new matrix is the old one
    with rows appended (new memories get the largest ids), only the new rows are compared
    with everything; any other change (an update, a delete) recomputes from scratch.
    """

    def __init__(self, neighbors: int) -> None:
        self._lock = threading.Lock()  # searches run in worker threads, sometimes two at once
        self._k = neighbors
        self._ids: list[int] = []
        self._matrix: NDArray[np.float32] | None = None
        self._top: NDArray[np.float32] | None = None

    def values(self, ids: list[int], matrix: NDArray[np.float32]) -> NDArray[np.float32]:
        with self._lock:
            return self._values(ids, matrix)

    def _values(self, ids: list[int], matrix: NDArray[np.float32]) -> NDArray[np.float32]:
        n = matrix.shape[0]
        k = min(self._k, n - 1)
        if k < 1:
            return np.zeros(n, dtype=np.float32)
        old, top = self._matrix, self._top
        if old is matrix and top is not None:
            return _means(top)
        m = 0 if old is None else old.shape[0]
        appended = (
            old is not None
            and top is not None
            and top.shape[1] == k
            and 0 < m < n
            and ids[:m] == self._ids
            and np.array_equal(old, matrix[:m])
        )
        if appended and old is not None and top is not None:
            fresh = matrix[m:]
            # old rows: merge their k best with their similarities to the new rows
            merged = np.concatenate([top, (fresh @ old.T).T], axis=1)
            kept = np.partition(merged, merged.shape[1] - k, axis=1)[:, merged.shape[1] - k :]
            new_top = np.concatenate([kept, _top_neighbours(fresh, matrix, m, k)])
        else:
            new_top = _all_top(matrix, k)
        self._ids, self._matrix, self._top = list(ids), matrix, new_top
        return _means(new_top)


def _means(top: NDArray[np.float32]) -> NDArray[np.float32]:
    out: NDArray[np.float32] = top.mean(axis=1).astype(np.float32)
    return out


class Ranker:
    """Hybrid search over a `SemanticBackend`. Synchronous: call it from a worker thread."""

    def __init__(
        self, store: SemanticBackend, embedder: Embedder, *, tuning: SearchTuning | None = None
    ) -> None:
        self._store = store
        self._embedder = embedder
        self.tuning = tuning or SearchTuning()
        # The store hands out the same matrix object until something is written.
        self._hubs = _HubIndex(self.tuning.hub_neighbors)

    def _lexical_terms(self, query: str, total: int) -> list[str]:
        limit = self.tuning.common_term_ratio * total
        return [t for t in fts_terms(query) if self._store.document_frequency(t) <= limit]

    def search(self, query: str, *, limit: int) -> list[Hit]:
        """The `limit` best memories for `query`, best first."""
        if not query.strip():
            return []
        ids, matrix = self._store.matrix(self._embedder.model_id)
        if not ids:
            return []
        q = self._embedder.embed([query])[0]
        sims = matrix @ q
        adjusted = sims - self.tuning.hub_penalty * self._hubs.values(ids, matrix)
        row_of = {memory_id: row for row, memory_id in enumerate(ids)}
        dense = [int(r) for r in np.argsort(-adjusted, kind="stable")[: self.tuning.dense_pool]]
        lexical_raw = self._store.lexical(
            self._lexical_terms(query, len(ids)), limit=self.tuning.lexical_pool
        )
        best = max((score for _, score in lexical_raw), default=0.0)
        lexical = {row_of[i]: (s / best if best > 0 else 0.0) for i, s in lexical_raw if i in row_of}
        w = self.tuning.dense_weight
        candidates = list(dict.fromkeys([*dense, *lexical]))
        scored = sorted(
            ((w * float(adjusted[r]) + (1 - w) * lexical.get(r, 0.0), r) for r in candidates),
            key=lambda pair: -pair[0],
        )[:limit]
        memories = self._store.get_many([ids[r] for _, r in scored])
        return [
            Hit(memories[ids[r]], score, float(sims[r]), lexical.get(r, 0.0))
            for score, r in scored
            if ids[r] in memories
        ]

    def nearest(self, vector: NDArray[np.float32], *, limit: int) -> list[tuple[Memory, float]]:
        """The memories most similar to `vector` by plain cosine (for reconciliation)."""
        ids, matrix = self._store.matrix(self._embedder.model_id)
        if not ids:
            return []
        sims = matrix @ vector
        rows = [int(r) for r in np.argsort(-sims, kind="stable")[:limit]]
        memories = self._store.get_many([ids[r] for r in rows])
        return [(memories[ids[r]], float(sims[r])) for r in rows if ids[r] in memories]
