# The episodic layer: every session and message, searchable.
# Neutral (no backend): `contract.py` (SessionReader, SessionWriter, SessionStore: what callers
# name), `search.py` (the `session_search` tool), `factory.py` (open_session_store: the one
# place a backend is chosen, and the only neutral module importing one), `reads.py` (the
# listing, message and search queries as checked values), `writes.py` (every
# write as a checked value, what `SessionWriter.apply` takes; the write fence), `journal.py`
# (write values the store refused, kept on local disk and replayed). Private: `_records.py`
# (value types), `_rows.py` (column lists and row decoding both backends share), `_ranking.py`
# (routes, IDF weights, the rare-term plan, from hits to ranked sessions), `_fts_query.py`
# (the query sanitizer), `_render.py` (how hits are shown to a model), `_scoped.py` (a reader
# that sees one principal's sessions), `_validate.py` (argument checks).
# Backends side by side, neither importing the other: `sqlite/` (SessionDB over
# <home>/state.db) and `postgres/` (PgSessionStore). `dense/` (neutral): message embeddings,
# the background indexer, query routing and fusion for hybrid search. Errors are in `memory.errors`; the
# migration runner both use is `memory/_migrations.py`.
import typing

from memory.lazy import lazy_names as _lazy_names
from memory.pglog import redact_url
from memory.sessions._fts_query import sanitize_fts_query
from memory.sessions._ranking import RankedSession, SearchStrategy
from memory.sessions._records import (
    AnchoredView,
    EndReason,
    FlushMode,
    FlushRecord,
    IndexFeatures,
    MatchMode,
    MessageRecord,
    SearchHit,
    SearchRoute,
    SessionRecord,
    StoredMessage,
    StoredRole,
    StoredUsage,
    storable_text,
)
from memory.sessions.contract import SessionReader, SessionStore, SessionWriter
from memory.sessions.dense import Routing, TextEmbedder, VectorStore, route_query
from memory.sessions.factory import SessionBackend, open_session_store, open_vectors, session_store_location
from memory.sessions.journal import JOURNAL_DIR_NAME, JournalledWriter, replay_journals
from memory.sessions.search import (
    DiscoverResult,
    SessionSearchArgs,
    SessionSearchTool,
    Summarizer,
    session_search_schema,
)
from memory.sessions.sqlite import STATE_DB_NAME, SessionDB, open_session_db

# The PostgreSQL backend (psycopg) and the dense index (numpy) load when a name below is
# first read (`memory.lazy`): a SQLite session store and the CLI's store commands need neither.
if typing.TYPE_CHECKING:
    from memory.sessions.dense import DenseIndex, DenseStatus
    from memory.sessions.postgres import PgSessionStore

__getattr__ = _lazy_names(
    globals(),
    {
        "memory.sessions.dense": ("DenseIndex", "DenseStatus"),
        "memory.sessions.postgres": ("PgSessionStore",),
    },
)

__all__ = [
    "JOURNAL_DIR_NAME",
    "STATE_DB_NAME",
    "AnchoredView",
    "DenseIndex",
    "DenseStatus",
    "DiscoverResult",
    "EndReason",
    "FlushMode",
    "FlushRecord",
    "IndexFeatures",
    "JournalledWriter",
    "MatchMode",
    "MessageRecord",
    "PgSessionStore",
    "RankedSession",
    "Routing",
    "SearchHit",
    "SearchRoute",
    "SearchStrategy",
    "SessionBackend",
    "SessionDB",
    "SessionReader",
    "SessionRecord",
    "SessionSearchArgs",
    "SessionSearchTool",
    "SessionStore",
    "SessionWriter",
    "StoredMessage",
    "StoredRole",
    "StoredUsage",
    "Summarizer",
    "TextEmbedder",
    "VectorStore",
    "open_session_db",
    "open_session_store",
    "open_vectors",
    "redact_url",
    "replay_journals",
    "route_query",
    "sanitize_fts_query",
    "session_search_schema",
    "session_store_location",
    "storable_text",
]
