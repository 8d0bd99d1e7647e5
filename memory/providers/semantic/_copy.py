"""`copy_memories`: one user's `semantic.db` copied into PostgreSQL rows (`keel storage migrate`).

The caller passes a *copy* of the file (the home is never opened for writing): it is brought
to this keel's schema version (a file from a newer keel is refused) and read in one snapshot.
Memories keep their ids, texts, keys, origins, timestamps, model ids and embeddings (float32
both sides, so the bytes survive exactly); the history is copied in order. The order of the
copy and its checks (the memory count, a SHA-256 over every memory's columns and embedding
bytes, the history count) are shared with the holographic facts: `memory.providers._copy`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.errors import SemanticStoreError
from memory.providers._copy import CopyPlan, copy_scope, next_free_id, read_copy
from memory.providers._pg import Conn, PgPlace, ScopeCopy
from memory.providers.semantic.store import MIGRATIONS

__all__ = ["copy_memories"]

_COLUMNS = "memory_id, content, content_key, origin, created_at, updated_at, model_id, embedding"
_HISTORY = "memory_id, event, old_content, new_content, at, session_id"


@dataclass(frozen=True, slots=True)
class _Dump:
    memories: list[tuple[object, ...]]
    history: list[tuple[object, ...]]
    next_id: int


def _embedding_bytes(value: object) -> bytes:
    """float32 bytes of an embedding: a SQLite blob as stored, a `real[]` as read back."""
    if isinstance(value, bytes | memoryview):
        return bytes(value)
    return np.asarray(value, dtype=np.float32).tobytes()


def _dump(conn: sqlite3.Connection) -> _Dump:
    memories = [tuple(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM memories ORDER BY memory_id")]
    history = [tuple(r) for r in conn.execute(f"SELECT {_HISTORY} FROM history ORDER BY event_id")]
    return _Dump(memories, history, next_free_id(conn, "memories", [int(str(m[0])) for m in memories]))


def _scope_memories(conn: Conn, scope: str) -> list[tuple[object, ...]]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM sem_memories WHERE scope = %s ORDER BY memory_id", (scope,), binary=True
    ).fetchall()
    return [tuple(r) for r in rows]


def _insert(conn: Conn, scope: str, dump: _Dump) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sem_memories (scope, memory_id, content, content_key, origin, created_at, updated_at, "
            "model_id, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::real[])",
            [
                (scope, *m[:7], np.frombuffer(_embedding_bytes(m[7]), dtype=np.float32).tolist())
                for m in dump.memories
            ],
        )
        cur.executemany(
            "INSERT INTO sem_history (scope, memory_id, event, old_content, new_content, at, session_id) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [(scope, *h) for h in dump.history],
        )


def copy_memories(source: Path, place: PgPlace, scope: str) -> ScopeCopy:
    """Copy the semantic memory at `source` (a copy the caller may change) into `scope`. Blocking.

    Raises:
        SemanticStoreError: the file cannot be read, is from a newer keel, or the server failed.
    """
    dump = read_copy(source, MIGRATIONS, _dump, what="semantic memory", error=SemanticStoreError)
    plan = CopyPlan(
        store="semantic",
        rows=dump.memories,
        blob=_embedding_bytes,
        next_id=dump.next_id,
        insert=lambda conn: _insert(conn, scope, dump),
        read_back=lambda conn: _scope_memories(conn, scope),
        side_table="sem_history",
        side_rows=len(dump.history),
    )
    return copy_scope(source, place, scope, plan, error=SemanticStoreError)
