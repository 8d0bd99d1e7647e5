# The semantic memory provider: Mem0-style learning from each exchange, recall by meaning.
# `embedder.py` (the Embedder protocol; all-MiniLM-L6-v2 int8 ONNX from a pinned wheel, run
# with onnxruntime + tokenizers), `store.py` (one SQLite file per user: memories, FTS5,
# history), `search.py` (embedding similarity with a hubness correction fused with bm25),
# `extract.py` (the Completer protocol, parsing extraction replies, reconciliation rules),
# `provider.py` (the MemoryProvider), `contract.py` (the SemanticBackend wall both stores
# sit behind). Private: `_learn.py` (one turn's extract → reconcile → apply, behind the
# circuit breaker), `_tools.py` (tool schemas and arguments), `_pg.py` (the memories as rows
# of the keel PostgreSQL schema, embeddings as `real[]`), `_copy.py` (a `semantic.db` copied
# into those rows by `keel storage migrate`).
# Its exceptions are in `memory.errors` (SemanticError and below).
"""Memory that learns from each exchange and recalls by meaning (config `memory.provider: semantic`).

Why our own code and not mem0's library (`mem0ai`), measured on this machine (Nov 2026):

- `pip download mem0ai` is 38 MB in 34 wheels (openai, qdrant-client, grpcio, SQLAlchemy,
  posthog, ...), and that runs nothing locally: its default embedder is OpenAI's API. Its
  local embedders are `huggingface` (sentence-transformers → PyTorch: 86 packages with
  torch 2.14 and fourteen `nvidia-*` CUDA wheels, several GB), `fastembed` (downloads the
  model from the hub at first use, which fails offline) or `ollama`/`lmstudio` (another
  server). Its telemetry (posthog) is on unless `MEM0_TELEMETRY=false` is set before import.
  The model side would work (an OpenAI-compatible base URL), the vector store too (qdrant's
  on-disk mode), but no local embedder installs without PyTorch or a download.
- Ours needs `onnxruntime` (28 MB) and two pinned data wheels (21 MB model, 0.7 MB tokenizer)
  on top of keel's own numpy, tokenizers and SQLite; the model call is the session's own
  client, the store a per-user SQLite file, and every write goes through keel's scanner.

So keel implements the Mem0 design itself: extraction after each turn, reconciliation
(add / update / delete / nothing) against the most similar memories, search by embeddings
fused with full-text rank, per-user stores, a circuit breaker, and tools for profile,
search and verbatim save.
"""

from memory.errors import (
    EmbedderError,
    SemanticBlockedError,
    SemanticError,
    SemanticInputError,
    SemanticStoreError,
)
from memory.providers.semantic._copy import copy_memories
from memory.providers.semantic._pg import PgSemanticStore
from memory.providers.semantic.contract import HistoryEvent, Memory, Origin, SemanticBackend, content_key
from memory.providers.semantic.embedder import (
    MINILM_MODEL,
    MINILM_TOKENIZER,
    Embedder,
    MiniLmEmbedder,
    PinnedFile,
    embedder_unavailable_reason,
)
from memory.providers.semantic.extract import (
    Completer,
    Decision,
    Reconciliation,
    grounded,
    negates,
    parse_candidates,
    parse_verdict,
)
from memory.providers.semantic.provider import SEMANTIC_PROMPT_BLOCK, SemanticProvider, semantic_db_path
from memory.providers.semantic.search import Hit, Ranker, SearchTuning, hubness
from memory.providers.semantic.store import SemanticStore

__all__ = [
    "MINILM_MODEL",
    "MINILM_TOKENIZER",
    "SEMANTIC_PROMPT_BLOCK",
    "Completer",
    "Decision",
    "Embedder",
    "EmbedderError",
    "HistoryEvent",
    "Hit",
    "Memory",
    "MiniLmEmbedder",
    "Origin",
    "PgSemanticStore",
    "PinnedFile",
    "Ranker",
    "Reconciliation",
    "SearchTuning",
    "SemanticBackend",
    "SemanticBlockedError",
    "SemanticError",
    "SemanticInputError",
    "SemanticProvider",
    "SemanticStore",
    "SemanticStoreError",
    "content_key",
    "copy_memories",
    "embedder_unavailable_reason",
    "grounded",
    "hubness",
    "negates",
    "parse_candidates",
    "parse_verdict",
    "semantic_db_path",
]
