# The episodic layer: every session and message, searchable.
# `contract.py` (SessionStore: the protocol every backend implements and callers name),
# `store.py` (SessionDB over <home>/state.db: SQLite, WAL, runs each call in a worker
# thread), `pg_store.py` (PgSessionStore on a PostgreSQL server: psycopg 3, pooled),
# `factory.py` (open_session_store: the one place a backend is chosen), `search.py` (the
# `session_search` tool). Private: `_records.py` (value types), `_schema.py` (numbered
# migrations, rebuildable FTS5/trigram indexes), `_sql.py` (the synchronous queries),
# `_search_index.py` (message-level FTS5 / trigram / LIKE search), `_fts_query.py` (the
# query sanitizer), `_pg_conn.py` / `_pg_schema.py` / `_pg_sql.py` / `_pg_search.py` (the
# PostgreSQL boundary, migrations, queries and search), `_search_rank.py` (strategies:
# from message hits to ranked sessions), `_search_render.py` (how hits are shown to a
# model), `_validate.py` (argument checks shared by the backends). The one SQLite boundary
# is `memory/_sqlite.py`; errors are in `memory.errors`.
from memory.sessions._fts_query import sanitize_fts_query
from memory.sessions._pg_conn import redact_url
from memory.sessions._records import (
    EndReason,
    FlushMode,
    FlushRecord,
    MessageRecord,
    SearchHit,
    SearchRoute,
    SessionRecord,
    StoredMessage,
    StoredRole,
)
from memory.sessions._schema import IndexFeatures
from memory.sessions._search_index import MatchMode
from memory.sessions._search_rank import RankedSession, SearchStrategy
from memory.sessions._sql import AnchoredView
from memory.sessions.contract import SessionStore
from memory.sessions.factory import SessionBackend, open_session_store, session_store_location
from memory.sessions.pg_store import PgSessionStore
from memory.sessions.search import (
    DiscoverResult,
    SessionSearchArgs,
    SessionSearchTool,
    Summarizer,
    session_search_schema,
)
from memory.sessions.store import STATE_DB_NAME, SessionDB, open_session_db

__all__ = [
    "STATE_DB_NAME",
    "AnchoredView",
    "DiscoverResult",
    "EndReason",
    "FlushMode",
    "FlushRecord",
    "IndexFeatures",
    "MatchMode",
    "MessageRecord",
    "PgSessionStore",
    "RankedSession",
    "SearchHit",
    "SearchRoute",
    "SearchStrategy",
    "SessionBackend",
    "SessionDB",
    "SessionRecord",
    "SessionSearchArgs",
    "SessionSearchTool",
    "SessionStore",
    "StoredMessage",
    "StoredRole",
    "Summarizer",
    "open_session_db",
    "open_session_store",
    "redact_url",
    "sanitize_fts_query",
    "session_search_schema",
    "session_store_location",
]
