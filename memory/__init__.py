# keel's memory layers, each a subpackage; `memory` never imports `harness`.
#
# `curated/`   MEMORY.md / USER.md: the MemoryStore, its snapshot policies, the `memory` tool
# `sessions/`  the episodic store (sqlite/: state.db with FTS5; postgres/) and the `session_search` tool
# `providers/` the external-provider contract, the manager, the holographic provider
# `skills/`    procedural memory: SKILL.md files, their index, tools and guard
# `scope.py`   who a session runs for (a user, a workspace) and where their files live
# `scanner/`   the write scanner every layer runs on text bound for a prompt
# `errors.py`  the whole MemoryLayerError tree, drawn in its docstring
# `grounding.py` whether a fact a model wrote is supported by what was said (flush, learning)
# `provenance.py` where text came from (untrusted: tool results, fetched, recalled, pasted)
#              and whether a memory write repeats it
# `testing.py` a scriptable provider for tests
# Private and shared: `_sqlite.py` (the one SQLite boundary), `_migrations.py` (the one
# numbered-migration runner, SQLite and PostgreSQL), `_atomic.py` (the one durable-write routine).
#
# This façade lists what `harness` uses and what a user or provider author has to name (the
# rule is in docs/architecture.md, "Public names"); every other public name is imported from
# its subpackage (`memory.curated`, `memory.sessions`, `memory.scanner`, ...), by memory's own
# modules and by tests alike.
import typing

from memory._atomic import atomic_write
from memory._sqlite import LockRetryPolicy
from memory.curated import (
    MEMORY_TOOL_NAME,
    AddOp,
    MemoryBlocks,
    MemoryOp,
    MemoryStore,
    MemoryTarget,
    MemoryTool,
    PendingWrites,
    RemoveOp,
    ReplaceOp,
    SnapshotPolicy,
    WriteResult,
    memory_tool_schema,
)
from memory.errors import (
    AmbiguousMatchError,
    DriftError,
    InvalidWriteError,
    MemoryLayerError,
    NoMatchError,
    ScanBlockedError,
    ScopeError,
    SessionBusyError,
    SessionConflictError,
    SessionNotFoundError,
    SessionSchemaError,
    SessionStoreBusyError,
    SessionStoreCorruptError,
    SessionStoreError,
    SessionStoreUnavailableError,
    SnapshotUnavailableError,
    StoreError,
    StoreFullError,
    StoreIOError,
    StoreLockTimeout,
    StoreReadError,
    StoreWriteError,
    TargetDisabledError,
    WriteRefused,
)
from memory.lazy import lazy_names as _lazy_names
from memory.pglog import redact_url
from memory.providers import (
    AgentContext,
    MemoryManager,
    MemoryProvider,
    MemoryWrite,
    ProviderContext,
    SwitchReason,
    TurnMessage,
    is_trivial,
)
from memory.scanner import scan
from memory.scope import Principal, check_scope_id
from memory.sessions import (
    STATE_DB_NAME,
    EndReason,
    FlushMode,
    MessageRecord,
    SessionDB,
    SessionRecord,
    SessionSearchTool,
    SessionStore,
    StoredMessage,
    StoredUsage,
    open_session_db,
    open_session_store,
    session_search_schema,
    session_store_location,
)

# The PostgreSQL session store loads psycopg when first read (`memory.lazy`).
if typing.TYPE_CHECKING:
    from memory.sessions import PgSessionStore

__getattr__ = _lazy_names(globals(), {"memory.sessions": ("PgSessionStore",)})

__all__ = [
    "MEMORY_TOOL_NAME",
    "STATE_DB_NAME",
    "AddOp",
    "AgentContext",
    "AmbiguousMatchError",
    "DriftError",
    "EndReason",
    "FlushMode",
    "InvalidWriteError",
    "LockRetryPolicy",
    "MemoryBlocks",
    "MemoryLayerError",
    "MemoryManager",
    "MemoryOp",
    "MemoryProvider",
    "MemoryStore",
    "MemoryTarget",
    "MemoryTool",
    "MemoryWrite",
    "MessageRecord",
    "NoMatchError",
    "PendingWrites",
    "PgSessionStore",
    "Principal",
    "ProviderContext",
    "RemoveOp",
    "ReplaceOp",
    "ScanBlockedError",
    "ScopeError",
    "SessionBusyError",
    "SessionConflictError",
    "SessionDB",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionSchemaError",
    "SessionSearchTool",
    "SessionStore",
    "SessionStoreBusyError",
    "SessionStoreCorruptError",
    "SessionStoreError",
    "SessionStoreUnavailableError",
    "SnapshotPolicy",
    "SnapshotUnavailableError",
    "StoreError",
    "StoreFullError",
    "StoreIOError",
    "StoreLockTimeout",
    "StoreReadError",
    "StoreWriteError",
    "StoredMessage",
    "StoredUsage",
    "SwitchReason",
    "TargetDisabledError",
    "TurnMessage",
    "WriteRefused",
    "WriteResult",
    "atomic_write",
    "check_scope_id",
    "is_trivial",
    "memory_tool_schema",
    "open_session_db",
    "open_session_store",
    "redact_url",
    "scan",
    "session_search_schema",
    "session_store_location",
]
