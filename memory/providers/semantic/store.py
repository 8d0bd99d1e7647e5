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
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from memory._migrations import Migration
from memory.errors import SemanticStoreError
from memory.providers._sqlite import FileKind, ProviderFile
from memory.providers.semantic import contract

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
_memory = contract.memory_from_row


_FILE = FileKind(
    what="semantic memory",
    error=SemanticStoreError,
    migrations=MIGRATIONS,
    too_new_fix="move the file aside",
    damaged_fix="if the file is damaged, move it aside and keel starts a new one",
)


@dataclass(frozen=True, slots=True)
class _SqliteTxn:
    """A `SemanticTxn` over the file's rows (inside its transaction; IMMEDIATE for a write)."""

    conn: sqlite3.Connection
    writes: int
    """How many write transactions this store had committed when this one began."""

    def by_key(self, key: str, *, besides: int | None = None) -> contract.Memory | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE content_key = ? AND memory_id != ?",
            (key, -1 if besides is None else besides),
        ).fetchone()
        return None if row is None else _memory(row)

    def get(self, memory_id: int) -> contract.Memory:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        if row is None:
            raise contract.missing_memory(memory_id)
        return _memory(row)

    def insert(
        self,
        content: str,
        key: str,
        origin: contract.Origin,
        at: float,
        model_id: str,
        vector: NDArray[np.float32],
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
        self,
        memory_id: int,
        event: contract.HistoryKind,
        old: str | None,
        new: str | None,
        session_id: str,
        at: float,
    ) -> None:
        self.conn.execute(
            "INSERT INTO history(memory_id, event, old_content, new_content, at, session_id) VALUES (?, ?, ?, ?, ?, ?)",
            (memory_id, event, old, new, at, session_id),
        )

    def reembed(self, rows: Sequence[tuple[int, NDArray[np.float32]]], model_id: str) -> None:
        self.conn.executemany(
            "UPDATE memories SET embedding = ?, model_id = ? WHERE memory_id = ?",
            [(_blob(v), model_id, i) for i, v in rows],
        )

    # ------------------------------------------------------------------ reads (`SemanticRows`)

    def get_many(self, memory_ids: Sequence[int]) -> list[contract.Memory]:
        marks = ",".join("?" * len(memory_ids))
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE memory_id IN ({marks})", list(memory_ids)
        )
        return [_memory(r) for r in rows.fetchall()]

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def recent(self, limit: int) -> list[contract.Memory]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories ORDER BY updated_at DESC, memory_id DESC LIMIT ?", (limit,)
        ).fetchall()
        return [_memory(r) for r in rows]

    def history(self) -> list[contract.HistoryEvent]:
        rows = self.conn.execute(
            "SELECT memory_id, event, old_content, new_content, session_id FROM history ORDER BY event_id"
        ).fetchall()
        return contract.history_from_rows(rows)

    def stale(self, model_id: str) -> list[tuple[int, str]]:
        rows = self.conn.execute("SELECT memory_id, content FROM memories WHERE model_id != ?", (model_id,))
        return [(int(i), str(c)) for i, c in rows.fetchall()]

    def stamp(self) -> contract.Stamp:
        # This store's own writes, and any other connection's (`data_version` moves then).
        return (self.writes, int(self.conn.execute("PRAGMA data_version").fetchone()[0]))

    def embeddings(self, model_id: str) -> tuple[list[int], NDArray[np.float32]]:
        rows = self.conn.execute(
            "SELECT memory_id, embedding FROM memories WHERE model_id = ? ORDER BY memory_id", (model_id,)
        ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [int(r[0]) for r in rows], np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])

    def lexical(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        # bm25 is negative, lower better: its absolute value is the score.
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self.conn.execute(
            "SELECT rowid, bm25(memories_fts) AS rank FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY rank LIMIT ?",
            (match, limit),
        ).fetchall()
        return [(int(r[0]), abs(float(r[1]))) for r in rows]

    def document_frequency(self, term: str) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
            ('"' + term.replace('"', '""') + '"',),
        ).fetchone()
        return int(row[0])


class SemanticStore(contract.SemanticBackend):
    """Memories, their embeddings and their FTS5 index in one SQLite file (a `SemanticBackend`).
    Use `SemanticStore.open`."""

    def __init__(self, file: ProviderFile, *, now: Callable[[], float]) -> None:
        self._file = file
        self.path = file.path
        self._now = now
        self._cache: tuple[tuple[contract.Stamp, str], list[int], NDArray[np.float32]] | None = None

    @classmethod
    def open(cls, path: Path, *, now: Callable[[], float] = time.time) -> SemanticStore:
        """Open (creating or migrating) the store at `path`. Blocking: call it in a thread.

        Raises:
            SemanticStoreError: the file cannot be opened or is not a semantic store.
        """
        return cls(ProviderFile.open(path, _FILE), now=now)

    @property
    def location(self) -> str:
        return str(self.path)

    def close(self) -> None:
        self._file.close()
        self._cache = None

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def _rows(self, *, write: bool) -> Iterator[_SqliteTxn]:
        with self._file.transaction(write=write) as conn:
            yield _SqliteTxn(conn, self._file.writes)

    def _write(self) -> AbstractContextManager[contract.SemanticTxn]:
        return self._rows(write=True)

    def _read(self) -> AbstractContextManager[contract.SemanticRows]:
        return self._rows(write=False)


def _blob(vector: NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()
