"""`PgSemanticStore`: one user's semantic memories as rows of the keel PostgreSQL schema.

The same `SemanticBackend` as the SQLite file (`store.py`), over the `sem_*` tables of
migration 5 (`memory.providers._pg` describes the scope, the writer row and the ids):

- `sem_memories`: one row per memory, keyed by (scope, memory_id), its `content_key` unique
  per scope, its embedding a `real[]` (float32, exactly what the embedder returned), and a
  generated `tsvector` (English stemming) with a GIN index;
- `sem_history`: every add, update and delete with the old and new text.

Search is scored in Python over the scope's embedding matrix, loaded once and kept until
the scope's write generation moves (a write here or on any other worker): a user holds a
few thousand memories at most, and the server needs no extension. Whether it offers
pgvector is detected when the stores open (`PgPlace.pgvector`) and only reported.

Every write first takes the scope's writer row, so the duplicate check and the insert see
the same memories on every machine. Blocking: the provider calls it from worker threads.
psycopg errors leave as `SemanticStoreError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memory.errors import SemanticStoreError
from memory.providers._pg import (
    Conn,
    PgPlace,
    ProviderScope,
    ScopeKind,
    any_words,
    generation,
    next_id,
    provider_scope,
)
from memory.providers.semantic.contract import (
    HistoryEvent,
    HistoryKind,
    Memory,
    Origin,
    SemanticBackend,
    SemanticRows,
    SemanticTxn,
    Stamp,
    history_from_rows,
    memory_from_row,
    missing_memory,
)

__all__ = ["PgSemanticStore"]

_COLUMNS = "memory_id, content, origin, created_at, updated_at"
_SAME_KEY = "scope = %s AND md5(content_key) = md5(%s) AND content_key = %s"


def _floats(vector: NDArray[np.float32]) -> list[float]:
    return [float(x) for x in np.asarray(vector, dtype=np.float32).ravel()]


_KIND = ScopeKind(
    store="semantic",
    what="semantic memory",
    table="sem_memories",
    tables="semantic memory",
    error=SemanticStoreError,
)


@dataclass(frozen=True, slots=True)
class _PgTxn:
    """A `SemanticTxn` over one scope's rows (for a write, the writer row is already taken)."""

    conn: Conn
    scope: str

    def by_key(self, key: str, *, besides: int | None = None) -> Memory | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM sem_memories WHERE {_SAME_KEY} AND memory_id <> %s",
            (self.scope, key, key, -1 if besides is None else besides),
        ).fetchone()
        return None if row is None else memory_from_row(row)

    def get(self, memory_id: int) -> Memory:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM sem_memories WHERE scope = %s AND memory_id = %s",
            (self.scope, memory_id),
        ).fetchone()
        if row is None:
            raise missing_memory(memory_id)
        return memory_from_row(row)

    def insert(
        self, content: str, key: str, origin: Origin, at: float, model_id: str, vector: NDArray[np.float32]
    ) -> int:
        memory_id = next_id(self.conn, self.scope, "semantic")
        self.conn.execute(
            "INSERT INTO sem_memories (scope, memory_id, content, content_key, origin, created_at, "
            "updated_at, model_id, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::real[])",
            (self.scope, memory_id, content, key, origin, at, at, model_id, _floats(vector)),
        )
        return memory_id

    def replace(
        self, memory_id: int, content: str, key: str, at: float, model_id: str, vector: NDArray[np.float32]
    ) -> None:
        self.conn.execute(
            "UPDATE sem_memories SET content = %s, content_key = %s, updated_at = %s, model_id = %s, "
            "embedding = %s::real[] WHERE scope = %s AND memory_id = %s",
            (content, key, at, model_id, _floats(vector), self.scope, memory_id),
        )

    def remove(self, memory_id: int) -> None:
        self.conn.execute(
            "DELETE FROM sem_memories WHERE scope = %s AND memory_id = %s", (self.scope, memory_id)
        )

    def log(
        self, memory_id: int, event: HistoryKind, old: str | None, new: str | None, session_id: str, at: float
    ) -> None:
        self.conn.execute(
            "INSERT INTO sem_history (scope, memory_id, event, old_content, new_content, at, session_id) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (self.scope, memory_id, event, old, new, at, session_id),
        )

    def reembed(self, rows: Sequence[tuple[int, NDArray[np.float32]]], model_id: str) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "UPDATE sem_memories SET embedding = %s::real[], model_id = %s WHERE scope = %s AND memory_id = %s",
                [(_floats(v), model_id, self.scope, i) for i, v in rows],
            )

    # ------------------------------------------------------------------ reads (`SemanticRows`)

    def get_many(self, memory_ids: Sequence[int]) -> list[Memory]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM sem_memories WHERE scope = %s AND memory_id = ANY(%s)",
            (self.scope, list(memory_ids)),
        ).fetchall()
        return [memory_from_row(r) for r in rows]

    def count(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM sem_memories WHERE scope = %s", (self.scope,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def recent(self, limit: int) -> list[Memory]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM sem_memories WHERE scope = %s ORDER BY updated_at DESC, memory_id DESC LIMIT %s",
            (self.scope, limit),
        ).fetchall()
        return [memory_from_row(r) for r in rows]

    def history(self) -> list[HistoryEvent]:
        rows = self.conn.execute(
            "SELECT memory_id, event, old_content, new_content, session_id FROM sem_history "
            "WHERE scope = %s ORDER BY event_id",
            (self.scope,),
        ).fetchall()
        return history_from_rows(rows)

    def stale(self, model_id: str) -> list[tuple[int, str]]:
        rows = self.conn.execute(
            "SELECT memory_id, content FROM sem_memories WHERE scope = %s AND model_id <> %s ORDER BY memory_id",
            (self.scope, model_id),
        ).fetchall()
        return [(int(i), str(c)) for i, c in rows]

    def stamp(self) -> Stamp:
        # The scope's write generation moves with a write on this or any other worker.
        return (generation(self.conn, self.scope, "semantic"),)

    def embeddings(self, model_id: str) -> tuple[list[int], NDArray[np.float32]]:
        rows = self.conn.execute(
            "SELECT memory_id, embedding FROM sem_memories WHERE scope = %s AND model_id = %s ORDER BY memory_id",
            (self.scope, model_id),
            binary=True,
        ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [int(r[0]) for r in rows], np.asarray([r[1] for r in rows], dtype=np.float32)

    def lexical(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        query, words = any_words(terms)
        rows = self.conn.execute(
            f"SELECT m.memory_id, ts_rank(m.search_tsv, q.q) AS rank FROM sem_memories m, (SELECT {query} AS q) q "
            "WHERE m.scope = %s AND m.search_tsv @@ q.q ORDER BY rank DESC, m.memory_id LIMIT %s",
            [*words, self.scope, limit],
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def document_frequency(self, term: str) -> int:
        query, words = any_words([term])
        row = self.conn.execute(
            f"SELECT count(*) FROM sem_memories WHERE scope = %s AND search_tsv @@ {query}",
            [self.scope, *words],
        ).fetchone()
        return 0 if row is None else int(row[0])


class PgSemanticStore(SemanticBackend):
    """One user's memories in PostgreSQL (a `SemanticBackend`). Use `PgSemanticStore.open`.

    The pool belongs to the caller: `close` only stops this store from being used.
    """

    def __init__(self, rows: ProviderScope, *, now: Callable[[], float]) -> None:
        self._scoped = rows
        self.scope = rows.scope
        self._now = now
        self._cache: tuple[tuple[Stamp, str], list[int], NDArray[np.float32]] | None = None

    @classmethod
    def open(
        cls, place: PgPlace, *, user_id: str | None, now: Callable[[], float] = time.time
    ) -> PgSemanticStore:
        """The memories of `user_id` in `place` (the schema is migrated by whoever opened the
        stores). Blocking: call it in a thread.

        Raises:
            ValueError: `user_id` is not a safe directory name.
            SemanticStoreError: the server cannot be used, or the schema has no memory tables.
        """
        store = cls(ProviderScope(place, provider_scope(user_id), _KIND), now=now)
        store.count()  # fail at open, not at the first turn
        return store

    @property
    def location(self) -> str:
        return self._scoped.location

    def close(self) -> None:
        self._scoped.close()
        self._cache = None

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def _rows(self, *, write: bool) -> Iterator[_PgTxn]:
        with self._scoped.transaction(write=write) as conn:
            yield _PgTxn(conn, self.scope)

    def _write(self) -> AbstractContextManager[SemanticTxn]:
        return self._rows(write=True)

    def _read(self) -> AbstractContextManager[SemanticRows]:
        return self._rows(write=False)
