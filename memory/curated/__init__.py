# The curated layer: MEMORY.md / USER.md, small notes frozen into the system prompt.
# `store.py` (MemoryStore: load, snapshot policies, locked atomic writes), `tool.py` (the
# `memory` tool's schema and handler); private: `_entries.py` (the text format: parse,
# serialize, measure, render, locate), `_ops.py` (write ops and the pure planner),
# `_disk.py` (blocking file work: read, lock, backup, archive), `_pending.py` (writes held
# for the user's confirmation: the `HeldWrites` contract, PENDING.jsonl), `_backend.py` (the `CuratedBackend` wall and
# the files behind it), `_pg.py` (the documents as versioned PostgreSQL rows, the held writes as rows). Writes are scanned by
# `memory.scanner`; errors are in `memory.errors`.
import typing

from memory.curated._backend import CuratedBackend, DocRead, FileBackend, text_hash
from memory.curated._entries import (
    DEFAULT_MEMORY_CHAR_LIMIT,
    DEFAULT_USER_CHAR_LIMIT,
    ENTRY_DELIMITER,
    MemoryTarget,
    MemoryUsage,
)
from memory.curated._ops import AddOp, CommittedOp, MemoryOp, OverflowPolicy, RemoveOp, ReplaceOp
from memory.curated._pending import PENDING_NAME, HeldWrites, PendingWrite, PendingWrites
from memory.curated.store import (
    ARCHIVE_NAME,
    MemoryBlocks,
    MemoryStore,
    SnapshotPolicy,
    WriteResult,
    memories_dir,
    sanitize_entry,
)
from memory.curated.tool import MEMORY_TOOL_NAME, MemoryTool, MemoryToolReply, memory_tool_schema
from memory.lazy import lazy_names as _lazy_names

# The PostgreSQL backend and its driver load when a name below is first read (`memory.lazy`):
# the CLI's file commands never pay for psycopg.
if typing.TYPE_CHECKING:
    from memory.curated._pg import (
        CuratedPool,
        PgCuratedBackend,
        PgHeldWrites,
        has_pgvector,
        open_curated_pool,
    )

__getattr__ = _lazy_names(
    globals(),
    {
        "memory.curated._pg": (
            "CuratedPool",
            "PgCuratedBackend",
            "PgHeldWrites",
            "has_pgvector",
            "open_curated_pool",
        )
    },
)

__all__ = [
    "ARCHIVE_NAME",
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "ENTRY_DELIMITER",
    "MEMORY_TOOL_NAME",
    "PENDING_NAME",
    "AddOp",
    "CommittedOp",
    "CuratedBackend",
    "CuratedPool",
    "DocRead",
    "FileBackend",
    "HeldWrites",
    "MemoryBlocks",
    "MemoryOp",
    "MemoryStore",
    "MemoryTarget",
    "MemoryTool",
    "MemoryToolReply",
    "MemoryUsage",
    "OverflowPolicy",
    "PendingWrite",
    "PendingWrites",
    "PgCuratedBackend",
    "PgHeldWrites",
    "RemoveOp",
    "ReplaceOp",
    "SnapshotPolicy",
    "WriteResult",
    "has_pgvector",
    "memories_dir",
    "memory_tool_schema",
    "open_curated_pool",
    "sanitize_entry",
    "text_hash",
]
