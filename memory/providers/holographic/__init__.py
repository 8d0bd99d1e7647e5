# The holographic memory provider: a local fact store with hybrid retrieval.
# `hrr.py` phase-vector HRR algebra (numpy; imported only when vectors are on),
# `contract.py` the FactBackend wall (and the write rules both stores obey), `store.py` the
# SQLite facts / entities / FTS5 / banks store, `retrieval.py` ranking (hybrid search and
# the entity queries), `provider.py` the MemoryProvider. Private helpers: `_entities.py`
# entity extraction, `_schema.py` the numbered SQLite migrations, `_tools.py` the
# fact_store / fact_feedback tools, `_pg.py` the same facts as rows of the keel PostgreSQL
# schema, `_copy.py` a `memory_store.db` copied into those rows (`keel storage migrate`).
# Its exceptions are in `memory.errors`.
# Importing this package does not import numpy; `memory.providers.holographic.hrr` does.

from memory.errors import FactBlockedError, FactInputError, FactStoreError, HolographicError
from memory.providers.holographic._copy import copy_facts
from memory.providers.holographic._entities import ExtractedEntity, extract_entities
from memory.providers.holographic._pg import PgFactStore
from memory.providers.holographic._tools import (
    FACT_FEEDBACK_DESCRIPTION,
    FACT_STORE_DESCRIPTION,
    FactTools,
    tool_schemas,
)
from memory.providers.holographic.contract import (
    CATEGORIES,
    AddResult,
    Category,
    Fact,
    FactBackend,
    TrustChange,
    load_codec,
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
from memory.providers.holographic.store import FactStore

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
    "FactBackend",
    "FactBlockedError",
    "FactInputError",
    "FactStore",
    "FactStoreError",
    "FactTools",
    "HolographicError",
    "HolographicProvider",
    "PgFactStore",
    "RetrievalWeights",
    "Retriever",
    "ScoredFact",
    "TrustChange",
    "copy_facts",
    "extract_entities",
    "load_codec",
    "render_recall",
    "tool_schemas",
]
