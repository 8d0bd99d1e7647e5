# The holographic memory provider: a local fact store with hybrid retrieval.
# `hrr.py` phase-vector HRR algebra (numpy; imported only when vectors are on),
# `store.py` the SQLite facts / entities / FTS5 / banks store, `retrieval.py` ranking
# (hybrid search and the entity queries), `provider.py` the MemoryProvider. Private
# helpers: `_text.py` tokenizing, `_entities.py` entity extraction, `_schema.py` the
# numbered SQLite migrations, `_tools.py` the fact_store / fact_feedback tools,
# Its exceptions are in `memory.errors`.
# Importing this package does not import numpy; `memory.providers.holographic.hrr` does.

from memory.errors import FactBlockedError, FactInputError, FactStoreError, HolographicError
from memory.providers.holographic._entities import ExtractedEntity, extract_entities
from memory.providers.holographic._tools import (
    FACT_FEEDBACK_DESCRIPTION,
    FACT_STORE_DESCRIPTION,
    FactTools,
    tool_schemas,
)
from memory.providers.holographic.provider import HOLOGRAPHIC_PROMPT_BLOCK, HolographicProvider, render_recall
from memory.providers.holographic.retrieval import (
    FTS_ONLY_WEIGHTS,
    LEXICAL_WEIGHTS,
    Contradiction,
    RetrievalWeights,
    Retriever,
    ScoredFact,
)
from memory.providers.holographic.store import (
    CATEGORIES,
    AddResult,
    Category,
    Fact,
    FactStore,
    TrustChange,
    load_codec,
)

__all__ = [
    "CATEGORIES",
    "FACT_FEEDBACK_DESCRIPTION",
    "FACT_STORE_DESCRIPTION",
    "FTS_ONLY_WEIGHTS",
    "HOLOGRAPHIC_PROMPT_BLOCK",
    "LEXICAL_WEIGHTS",
    "AddResult",
    "Category",
    "Contradiction",
    "ExtractedEntity",
    "Fact",
    "FactBlockedError",
    "FactInputError",
    "FactStore",
    "FactStoreError",
    "FactTools",
    "HolographicError",
    "HolographicProvider",
    "RetrievalWeights",
    "Retriever",
    "ScoredFact",
    "TrustChange",
    "extract_entities",
    "load_codec",
    "render_recall",
    "tool_schemas",
]
