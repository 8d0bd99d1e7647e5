# Dense retrieval for session_search: message embeddings beside the messages, fused with words.
# `contract.py` (the TextEmbedder and VectorStore protocols, the rows they pass), `codes.py`
# (sign codes and the in-memory Hamming prefilter), `index.py` (DenseIndex: the background
# indexer and the nearest-message search), `hybrid.py` (query routing and score fusion). The tables themselves are each backend's (`sqlite/_vectors.py`,
# `postgres/_vectors.py`), opened by `memory.sessions.factory.open_vectors`. Neutral: never
# imports a backend.
"""Hybrid lexical + dense retrieval for `session_search` (optional: needs an embedder)."""

import typing

from memory.lazy import lazy_names as _lazy_names
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

# The modules doing arithmetic load numpy: they are imported when a name below is first read
# (`memory.lazy`), so the session store and the CLI's store commands never load numpy.
if typing.TYPE_CHECKING:
    from memory.sessions.dense.codes import CodeIndex, sign_codes, vector_rows
    from memory.sessions.dense.index import DenseHit, DenseIndex, DenseStatus, Progress

__getattr__ = _lazy_names(
    globals(),
    {
        "memory.sessions.dense.codes": ("CodeIndex", "sign_codes", "vector_rows"),
        "memory.sessions.dense.index": ("DenseHit", "DenseIndex", "DenseStatus", "Progress"),
    },
)

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
