# keel's memory layers. The curated store (MEMORY.md / USER.md) with its write scanner
# and `memory` tool; the episodic session store (SQLite FTS5) and session_search; skills;
# the external-provider contract, the manager and the holographic provider.
# `memory` imports only the stdlib, filelock, pydantic and numpy — never `harness`.
#
# Episodic layer: `sessions.py` (SessionDB over <home>/state.db) with its private parts —
# `_session_records.py` (value types), `_session_errors.py` (exception tree),
# `_sessions_schema.py` (migrations, FTS indexes), `_sessions_sql.py` (queries),
# `_sqlite.py` (connection, retry, error translation), `_search_index.py` (message-level
# FTS5/trigram/LIKE search), `_fts_query.py` (query sanitizer) — and `search.py` (the
# session_search tool) with `_search_rank.py` (strategies) and `_search_render.py` (JSON).

from memory._fts_query import sanitize_fts_query
from memory._search_index import MatchMode
from memory._search_rank import RankedSession, SearchStrategy
from memory._session_errors import (
    SessionConflictError,
    SessionNotFoundError,
    SessionQueryError,
    SessionSchemaError,
    SessionStoreBusyError,
    SessionStoreCorruptError,
    SessionStoreError,
)
from memory._session_records import (
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
from memory._sessions_schema import IndexFeatures
from memory._sessions_sql import AnchoredView
from memory._sqlite import LockRetryPolicy
from memory.search import (
    DiscoverResult,
    SessionSearchArgs,
    SessionSearchTool,
    Summarizer,
    session_search_schema,
)
from memory.sessions import STATE_DB_NAME, SessionDB, open_session_db

__all__ = [
    "STATE_DB_NAME",
    "AnchoredView",
    "DiscoverResult",
    "EndReason",
    "FlushMode",
    "FlushRecord",
    "IndexFeatures",
    "LockRetryPolicy",
    "MatchMode",
    "MessageRecord",
    "RankedSession",
    "SearchHit",
    "SearchRoute",
    "SearchStrategy",
    "SessionConflictError",
    "SessionDB",
    "SessionNotFoundError",
    "SessionQueryError",
    "SessionRecord",
    "SessionSchemaError",
    "SessionSearchArgs",
    "SessionSearchTool",
    "SessionStoreBusyError",
    "SessionStoreCorruptError",
    "SessionStoreError",
    "StoredMessage",
    "StoredRole",
    "Summarizer",
    "open_session_db",
    "sanitize_fts_query",
    "session_search_schema",
]
