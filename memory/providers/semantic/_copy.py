"""`copy_memories`: one user's `semantic.db` copied into PostgreSQL rows (`keel storage migrate`).

The caller passes a *copy* of the file (the home is never opened for writing): it is brought
to this keel's schema version (a file from a newer keel is refused) and read in one snapshot.
Memories keep their ids, texts, keys, origins, timestamps, model ids and embeddings (float32
both sides, so the bytes survive exactly); the history is copied in order. Everything lands
in one transaction under the scope's writer row, then is read back and checked: the memory
count and a SHA-256 over every memory's columns and embedding bytes, and the history count.
A scope written before is compared instead: the same hash is `skipped`, another is a
`conflict` and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory._migrations import migrate_sqlite
from memory._sqlite import LockRetryPolicy, SqliteConnection
from memory.errors import SemanticStoreError
from memory.providers._pg import (
    Conn,
    PgPlace,
    ScopeCopy,
    claim,
    first_line,
    scope_exists,
    set_next_id,
    transaction,
)
from memory.providers.semantic.store import MIGRATIONS

__all__ = ["copy_memories", "memories_digest"]

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


def memories_digest(rows: Sequence[Sequence[object]]) -> str:
    """The hash memories are verified by: every column in id order, embeddings by their bytes."""
    h = hashlib.sha256()
    for r in sorted(rows, key=lambda r: int(str(r[0]))):
        cells = [str(c) if isinstance(c, str) else repr(c) for c in r[:7]]
        cells.append(hashlib.sha256(_embedding_bytes(r[7])).hexdigest())
        h.update(json.dumps(cells, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def _translate(exc: sqlite3.Error, path: Path) -> SemanticStoreError:
    return SemanticStoreError(f"cannot read the semantic memory copy {str(path)!r}: {exc}")


def _dump(conn: sqlite3.Connection) -> _Dump:
    memories = [tuple(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM memories ORDER BY memory_id")]
    history = [tuple(r) for r in conn.execute(f"SELECT {_HISTORY} FROM history ORDER BY event_id")]
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone()
    top = max([int(str(m[0])) for m in memories] + [0 if seq is None else int(seq[0])])
    return _Dump(memories, history, top + 1)


def _read(path: Path) -> _Dump:
    conn = SqliteConnection.connect(path, retry=LockRetryPolicy(), translate=_translate)
    try:
        with conn.transaction(write=True) as c:
            migrate_sqlite(
                c,
                MIGRATIONS,
                too_new=lambda found, known: SemanticStoreError(
                    f"{str(path)!r} has semantic memory schema version {found}, newer than this keel "
                    f"({known}); upgrade keel before migrating"
                ),
            )
        return conn.read(_dump)
    finally:
        conn.close()


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
    dump = _read(source)
    wanted = memories_digest(dump.memories)

    def fail(exc: BaseException) -> SemanticStoreError:
        return SemanticStoreError(f"copying {str(source)!r} into scope {scope!r} failed: {first_line(exc)}")

    with transaction(place, fail) as conn:
        if scope_exists(conn, scope, "semantic"):
            same = memories_digest(_scope_memories(conn, scope)) == wanted
            return ScopeCopy("skipped" if same else "conflict", True, len(dump.memories))
        claim(conn, scope, "semantic")
        _insert(conn, scope, dump)
        set_next_id(conn, scope, "semantic", dump.next_id)
        events = conn.execute("SELECT count(*) FROM sem_history WHERE scope = %s", (scope,)).fetchone()
        copied = _scope_memories(conn, scope)
    verified = (
        len(copied) == len(dump.memories)
        and memories_digest(copied) == wanted
        and events is not None
        and int(events[0]) == len(dump.history)
    )
    return ScopeCopy("copied", verified, len(dump.memories))
