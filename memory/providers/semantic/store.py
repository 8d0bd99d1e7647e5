"""The SQLite store behind the semantic provider: one file per user.

One of the two `SemanticBackend`s (`contract.py`); the other keeps the same memories in
PostgreSQL (`_pg.py`).

`<home>/semantic.db`, or `<home>/users/<user_id>/semantic.db` when keel scopes memory per
user — separate files, so one user's memories cannot reach another's searches through any
query, bug or tool argument. WAL journal; every write is one `BEGIN IMMEDIATE` transaction.

Tables: `memories` (text, a unique normalized key so the same fact is never stored twice,
where it came from, timestamps, the embedding and the id of the model that made it),
`memories_fts` (an FTS5 external-content index over the text, Porter-stemmed, kept in step
by triggers), `history` (every add / update / delete with the old and new text, like an
audit log), and numbered migrations run by keel's one runner (`memory._migrations`).

`SemanticStore` is synchronous and thread-safe (one connection behind a lock); the provider
calls it through `anyio.to_thread.run_sync`. Connection, pragmas and transactions come from
keel's one SQLite boundary (`memory._sqlite`), which hands `sqlite3` errors to `_translate`
here: callers only ever see `SemanticStoreError`. The embedding matrix is cached in memory and reloaded when this
store or another connection (`PRAGMA data_version`) has written since.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from memory._migrations import Migration, migrate_sqlite
from memory._sqlite import LockRetryPolicy, SqliteConnection, is_busy
from memory.errors import SemanticStoreError
from memory.providers.semantic.contract import (
    HistoryEvent,
    HistoryKind,
    Memory,
    Origin,
    SemanticTxn,
    SemanticWrites,
    history_from_rows,
    memory_from_row,
    missing_memory,
)

__all__ = ["MIGRATIONS", "SemanticStore"]

MIGRATIONS = (
    Migration(
        1,
        "memories, their FTS5 index, history",
        (
            """CREATE TABLE memories (
                memory_id INTEGER PRIMARY KEY AUTOINCREMENT,
                content TEXT NOT NULL,
                content_key TEXT NOT NULL UNIQUE,
                origin TEXT NOT NULL CHECK (origin IN ('extracted', 'saved')),
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                model_id TEXT NOT NULL,
                embedding BLOB NOT NULL
            )""",
            """CREATE VIRTUAL TABLE memories_fts USING fts5(
                content, content='memories', content_rowid='memory_id', tokenize='porter unicode61'
            )""",
            """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts(rowid, content) VALUES (new.memory_id, new.content);
            END""",
            """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts(memories_fts, rowid, content)
                    VALUES ('delete', old.memory_id, old.content);
            END""",
            """CREATE TRIGGER memories_au AFTER UPDATE OF content ON memories BEGIN
                INSERT INTO memories_fts(memories_fts, rowid, content)
                    VALUES ('delete', old.memory_id, old.content);
                INSERT INTO memories_fts(rowid, content) VALUES (new.memory_id, new.content);
            END""",
            """CREATE TABLE history (
                event_id INTEGER PRIMARY KEY AUTOINCREMENT,
                memory_id INTEGER NOT NULL,
                event TEXT NOT NULL CHECK (event IN ('add', 'update', 'delete')),
                old_content TEXT,
                new_content TEXT,
                at REAL NOT NULL,
                session_id TEXT NOT NULL DEFAULT ''
            )""",
            "CREATE INDEX history_memory ON history(memory_id)",
        ),
    ),
)

_COLUMNS = "memory_id, content, origin, created_at, updated_at"
_memory = memory_from_row

_RETRY = LockRetryPolicy(busy_timeout_s=5.0)


def _translate(exc: sqlite3.Error, path: Path) -> SemanticStoreError:
    if is_busy(exc):
        return SemanticStoreError(
            f"the semantic memory {str(path)!r} stayed locked by another writer ({exc}); retry, "
            "or stop the other keel process"
        )
    return SemanticStoreError(
        f"the semantic memory {str(path)!r} failed: {exc}; if the file is damaged, "
        "move it aside and keel starts a new one"
    )


@dataclass(frozen=True, slots=True)
class _SqliteTxn:
    """A `SemanticTxn` over the file's rows (inside its IMMEDIATE transaction)."""

    conn: sqlite3.Connection

    def by_key(self, key: str, *, besides: int | None = None) -> Memory | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE content_key = ? AND memory_id != ?",
            (key, -1 if besides is None else besides),
        ).fetchone()
        return None if row is None else _memory(row)

    def get(self, memory_id: int) -> Memory:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        if row is None:
            raise missing_memory(memory_id)
        return _memory(row)

    def insert(
        self, content: str, key: str, origin: Origin, at: float, model_id: str, vector: NDArray[np.float32]
    ) -> int:
        cursor = self.conn.execute(
            "INSERT INTO memories(content, content_key, origin, created_at, updated_at, model_id, embedding) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (content, key, origin, at, at, model_id, _blob(vector)),
        )
        return int(cursor.lastrowid or 0)

    def replace(
        self, memory_id: int, content: str, key: str, at: float, model_id: str, vector: NDArray[np.float32]
    ) -> None:
        self.conn.execute(
            "UPDATE memories SET content = ?, content_key = ?, updated_at = ?, model_id = ?, embedding = ? "
            "WHERE memory_id = ?",
            (content, key, at, model_id, _blob(vector), memory_id),
        )

    def remove(self, memory_id: int) -> None:
        self.conn.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))

    def log(
        self, memory_id: int, event: HistoryKind, old: str | None, new: str | None, session_id: str, at: float
    ) -> None:
        self.conn.execute(
            "INSERT INTO history(memory_id, event, old_content, new_content, at, session_id) VALUES (?, ?, ?, ?, ?, ?)",
            (memory_id, event, old, new, at, session_id),
        )


class SemanticStore(SemanticWrites):
    """Memories, their embeddings and their FTS5 index in one SQLite file (a `SemanticBackend`).
    Use `SemanticStore.open`."""

    def __init__(self, conn: SqliteConnection, path: Path, *, now: Callable[[], float]) -> None:
        self._conn: SqliteConnection | None = conn
        self._lock = threading.RLock()
        self.path = path
        self._now = now
        self._generation = 0
        self._cache: tuple[tuple[int, int, str], list[int], NDArray[np.float32]] | None = None

    @classmethod
    def open(cls, path: Path, *, now: Callable[[], float] = time.time) -> SemanticStore:
        """Open (creating or migrating) the store at `path`. Blocking: call it in a thread.

        Raises:
            SemanticStoreError: the file cannot be opened or is not a semantic store.
        """
        try:
            conn = SqliteConnection.connect(path, retry=_RETRY, translate=_translate)
        except OSError as exc:
            raise SemanticStoreError(
                f"cannot open the semantic memory {str(path)!r}: {exc}; check the path"
            ) from exc
        store = cls(conn, path, now=now)
        try:
            store._setup()
        except BaseException:
            conn.close()
            raise
        return store

    @property
    def location(self) -> str:
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._cache = None

    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection under the lock, in one transaction (IMMEDIATE for a write)."""
        with self._lock:
            if self._conn is None:
                raise SemanticStoreError(f"the semantic memory {str(self.path)!r} is closed")
            with self._conn.transaction(write=write) as conn:
                yield conn
            if write:
                self._generation += 1

    def _setup(self) -> None:
        with self._db(write=True) as conn:
            migrate_sqlite(conn, MIGRATIONS, too_new=self._too_new)

    def _too_new(self, found: int, known: int) -> SemanticStoreError:
        return SemanticStoreError(
            f"the semantic memory {str(self.path)!r} has schema version {found}, newer than this keel "
            f"understands ({known}); upgrade keel or move the file aside"
        )

    # ------------------------------------------------------------------ writes

    @contextmanager
    def _write(self) -> Iterator[SemanticTxn]:
        with self._db(write=True) as conn:
            yield _SqliteTxn(conn)

    def reembed(self, rows: Sequence[tuple[int, NDArray[np.float32]]], *, model_id: str) -> None:
        """Store new embeddings (after a change of embedding model)."""
        with self._db(write=True) as conn:
            conn.executemany(
                "UPDATE memories SET embedding = ?, model_id = ? WHERE memory_id = ?",
                [(_blob(v), model_id, i) for i, v in rows],
            )

    # ------------------------------------------------------------------ reads

    def get(self, memory_id: int) -> Memory:
        with self._db() as conn:
            return _SqliteTxn(conn).get(memory_id)

    def get_many(self, memory_ids: Sequence[int]) -> dict[int, Memory]:
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        with self._db() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE memory_id IN ({marks})", list(memory_ids)
            )
            return {m.memory_id: m for m in map(_memory, rows.fetchall())}

    def count(self) -> int:
        with self._db() as conn:
            return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def recent(self, *, limit: int) -> list[Memory]:
        """The most recently updated memories first."""
        with self._db() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories ORDER BY updated_at DESC, memory_id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [_memory(r) for r in rows]

    def history(self) -> list[HistoryEvent]:
        with self._db() as conn:
            rows = conn.execute(
                "SELECT memory_id, event, old_content, new_content, session_id FROM history ORDER BY event_id"
            ).fetchall()
        return history_from_rows(rows)

    def stale_embeddings(self, model_id: str) -> list[tuple[int, str]]:
        """(id, text) of memories embedded by another model."""
        with self._db() as conn:
            rows = conn.execute(
                "SELECT memory_id, content FROM memories WHERE model_id != ?", (model_id,)
            ).fetchall()
        return [(int(i), str(c)) for i, c in rows]

    def matrix(self, model_id: str) -> tuple[list[int], NDArray[np.float32]]:
        """Ids and the embedding matrix (one row each) of every memory made by `model_id`.

        Cached until this store or another connection writes.
        """
        with self._db() as conn:
            outside = int(conn.execute("PRAGMA data_version").fetchone()[0])
            stamp = (self._generation, outside, model_id)
            if self._cache is not None and self._cache[0] == stamp:
                return self._cache[1], self._cache[2]
            rows = conn.execute(
                "SELECT memory_id, embedding FROM memories WHERE model_id = ? ORDER BY memory_id", (model_id,)
            ).fetchall()
            ids = [int(r[0]) for r in rows]
            if rows:
                matrix = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
            else:
                matrix = np.zeros((0, 0), dtype=np.float32)
            self._cache = (stamp, ids, matrix)
            return ids, matrix

    def lexical(self, terms: Sequence[str], *, limit: int) -> list[tuple[int, float]]:
        """(id, bm25 as a positive number, higher better) for memories matching any of `terms`."""
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._db() as conn:
            rows = conn.execute(
                "SELECT rowid, bm25(memories_fts) AS rank FROM memories_fts WHERE memories_fts MATCH ? "
                "ORDER BY rank LIMIT ?",
                (match, limit),
            ).fetchall()
        return [(int(r[0]), abs(float(r[1]))) for r in rows]

    def document_frequency(self, term: str) -> int:
        """How many memories contain `term` (as FTS5 matches it, stemmed)."""
        with self._db() as conn:
            row = conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                ('"' + term.replace('"', '""') + '"',),
            ).fetchone()
        return int(row[0])


def _blob(vector: NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()
