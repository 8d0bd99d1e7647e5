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
from memory._breaker import BreakerState
from memory._entries import (
    DEFAULT_MEMORY_CHAR_LIMIT,
    DEFAULT_USER_CHAR_LIMIT,
    ENTRY_DELIMITER,
    MemoryTarget,
    MemoryUsage,
)
from memory._ops import AddOp, CommittedOp, MemoryOp, OverflowPolicy, RemoveOp, ReplaceOp
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
from memory.store import MemoryBlocks, MemoryStore, SnapshotPolicy, WriteResult, memories_dir, sanitize_entry
from memory.tool import MEMORY_TOOL_NAME, MemoryTool, MemoryToolReply, memory_tool_schema

__all__ = [
    "CORE_TOOL_NAMES",
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "ENTRY_DELIMITER",
    "MEMORY_TOOL_NAME",
    "AddOp",
    "AgentContext",
    "AmbiguousMatchError",
    "BreakerState",
    "CommittedOp",
    "DriftError",
    "Finding",
    "FindingCategory",
    "InvalidWriteError",
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
    "NoMatchError",
    "OverflowPolicy",
    "Recall",
    "RefusalReason",
    "RemoveOp",
    "ReplaceOp",
    "ScanBlockedError",
    "ScanScope",
    "SnapshotPolicy",
    "StoreError",
    "StoreFullError",
    "StoreIOError",
    "StoreLockTimeout",
    "StoreReadError",
    "StoreWriteError",
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
    "sanitize_entry",
    "scan",
]
