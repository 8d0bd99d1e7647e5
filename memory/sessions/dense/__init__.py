# Dense retrieval for session_search: message embeddings beside the messages, fused with words.
# `contract.py` (the TextEmbedder and VectorStore protocols, the rows they pass), `codes.py`
# (sign codes and the in-memory Hamming prefilter), `index.py` (DenseIndex: the background
# indexer and the nearest-message search), `hybrid.py` (query routing and score fusion). The tables themselves are each backend's (`sqlite/_vectors.py`,
# `postgres/_vectors.py`), opened by `memory.sessions.factory.open_vectors`. Neutral: never
# imports a backend.
"""Hybrid lexical + dense retrieval for `session_search` (optional: needs an embedder)."""

from memory.sessions.dense.codes import CodeIndex, sign_codes, vector_rows
from memory.sessions.dense.contract import (
    EMBEDDED_ROLES,
    CandidateRow,
    PendingMessage,
    TextEmbedder,
    VectorRow,
    VectorStore,
)
from memory.sessions.dense.hybrid import (
    DENSE_CANDIDATES,
    DENSE_FLOOR,
    HYBRID_DENSE_WEIGHT,
    TEMPORAL_DENSE_WEIGHT,
    Fused,
    Route,
    Routing,
    fuse,
    route_query,
)
from memory.sessions.dense.index import DenseHit, DenseIndex, DenseStatus, Progress

__all__ = [
    "DENSE_CANDIDATES",
    "DENSE_FLOOR",
    "EMBEDDED_ROLES",
    "HYBRID_DENSE_WEIGHT",
    "TEMPORAL_DENSE_WEIGHT",
    "CandidateRow",
    "CodeIndex",
    "DenseHit",
    "DenseIndex",
    "DenseStatus",
    "Fused",
    "PendingMessage",
    "Progress",
    "Route",
    "Routing",
    "TextEmbedder",
    "VectorRow",
    "VectorStore",
    "fuse",
    "route_query",
    "sign_codes",
    "vector_rows",
]
