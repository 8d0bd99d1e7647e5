# keel's memory layers. The curated store (MEMORY.md / USER.md) with its write scanner
# and `memory` tool; the episodic session store (SQLite FTS5) and session_search; skills;
# the external-provider contract, the manager and the holographic provider.
# `memory` imports only the stdlib, filelock, pydantic and numpy — never `harness`.
#
# Curated store: `store` (MemoryStore, snapshot policies), `scanner` (threat scan),
# `tool` (the `memory` tool schema and handler), `errors` (the MemoryLayerError tree);
# private helpers `_entries` (text format), `_ops` (write planning), `_disk` (file I/O).
# Providers: `provider.py` (the MemoryProvider contract and its value types), `manager.py`
# (MemoryManager: routing, isolation, background recall, breakers), `holographic/` (the local
# HRR + SQLite fact store), `testing.py` (ScriptedProvider for tests).
# Episodic layer: `sessions.py` (SessionDB over <home>/state.db) with its private parts —
# `_session_records.py` (value types), `_session_errors.py` (exception tree),
# `_sessions_schema.py` (migrations, FTS indexes), `_sessions_sql.py` (queries),
# `_sqlite.py` (connection, retry, error translation), `_search_index.py` (message-level
# FTS5/trigram/LIKE search), `_fts_query.py` (query sanitizer) — and `search.py` (the
# session_search tool) with `_search_rank.py` (strategies) and `_search_render.py` (JSON).
from memory._breaker import BreakerState
from memory._entries import (
    DEFAULT_MEMORY_CHAR_LIMIT,
    DEFAULT_USER_CHAR_LIMIT,
    ENTRY_DELIMITER,
    MemoryTarget,
    MemoryUsage,
)
from memory._fts_query import sanitize_fts_query
from memory._ops import AddOp, CommittedOp, MemoryOp, OverflowPolicy, RemoveOp, ReplaceOp
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
from memory._trivial import is_trivial
from memory.errors import (
    AmbiguousMatchError,
    DriftError,
    InvalidWriteError,
    MemoryLayerError,
    NoMatchError,
    RefusalReason,
    ScanBlockedError,
    StoreError,
    StoreFullError,
    StoreIOError,
    StoreLockTimeout,
    StoreReadError,
    StoreWriteError,
    TargetDisabledError,
    WriteRefused,
)
from memory.manager import CORE_TOOL_NAMES, MemoryManager, Recall
from memory.provider import (
    AgentContext,
    MemoryProvider,
    MemoryWrite,
    SwitchReason,
    TurnMessage,
    WriteAction,
    WriteTarget,
)
from memory.scanner import Finding, FindingCategory, ScanScope, blocked_placeholder, describe_findings, scan
from memory.search import (
    DiscoverResult,
    SessionSearchArgs,
    SessionSearchTool,
    Summarizer,
    session_search_schema,
)
from memory.sessions import STATE_DB_NAME, SessionDB, open_session_db
from memory.store import MemoryBlocks, MemoryStore, SnapshotPolicy, WriteResult, memories_dir, sanitize_entry
from memory.tool import MEMORY_TOOL_NAME, MemoryTool, MemoryToolReply, memory_tool_schema

__all__ = [
    "CORE_TOOL_NAMES",
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "ENTRY_DELIMITER",
    "MEMORY_TOOL_NAME",
    "STATE_DB_NAME",
    "AddOp",
    "AgentContext",
    "AmbiguousMatchError",
    "AnchoredView",
    "BreakerState",
    "CommittedOp",
    "DiscoverResult",
    "DriftError",
    "EndReason",
    "Finding",
    "FindingCategory",
    "FlushMode",
    "FlushRecord",
    "IndexFeatures",
    "InvalidWriteError",
    "LockRetryPolicy",
    "MatchMode",
    "MemoryBlocks",
    "MemoryLayerError",
    "MemoryManager",
    "MemoryOp",
    "MemoryProvider",
    "MemoryStore",
    "MemoryTarget",
    "MemoryTool",
    "MemoryToolReply",
    "MemoryUsage",
    "MemoryWrite",
    "MessageRecord",
    "NoMatchError",
    "OverflowPolicy",
    "RankedSession",
    "Recall",
    "RefusalReason",
    "RemoveOp",
    "ReplaceOp",
    "ScanBlockedError",
    "ScanScope",
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
    "SnapshotPolicy",
    "StoreError",
    "StoreFullError",
    "StoreIOError",
    "StoreLockTimeout",
    "StoreReadError",
    "StoreWriteError",
    "StoredMessage",
    "StoredRole",
    "Summarizer",
    "SwitchReason",
    "TargetDisabledError",
    "TurnMessage",
    "WriteAction",
    "WriteRefused",
    "WriteResult",
    "WriteTarget",
    "blocked_placeholder",
    "describe_findings",
    "is_trivial",
    "memories_dir",
    "memory_tool_schema",
    "open_session_db",
    "sanitize_entry",
    "sanitize_fts_query",
    "scan",
    "session_search_schema",
]
