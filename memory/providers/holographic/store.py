"""The SQLite fact store behind the holographic provider (`<home>/memory_store.db`).

One of the two `FactBackend`s (`contract.py`); the other keeps the same facts in PostgreSQL
(`_pg.py`). The writes are the contract's (`FactWrites`); this store gives them one
transaction over its rows (`_SqliteTxn`).

Tables: `facts` (unique content, category, tags, trust, retrieval/helpful counters,
timestamps, the HRR vector), `entities` + `fact_entities` (names pulled out of each fact,
with aliases), `facts_fts` (an FTS5 external-content index over content and tags, kept in
step by triggers; English words are Porter-stemmed so "works" finds "work"),
`memory_banks` (one bundled vector per category, rebuilt lazily after writes) and `meta`
(the vector dimension). Schema changes are numbered migrations (`_schema.py`, run by
keel's one runner, `memory._migrations`).

`FactStore` is synchronous and thread-safe (one connection behind a lock); async callers
run its methods through `anyio.to_thread.run_sync`. The connection, its pragmas and its
transactions come from keel's one SQLite boundary (`memory._sqlite`), which hands every
`sqlite3` error to `_translate` here, so callers only ever see `FactStoreError`. Vectors are computed only when an `HrrCodec` is
given (numpy present); without one, facts are stored without vectors and are given one
the next time the store is opened with numpy.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.errors import FactStoreError
from memory.providers._sqlite import FileKind, ProviderFile
from memory.providers.holographic._entities import ExtractedEntity, extract_entities
from memory.providers.holographic._schema import MIGRATIONS
from memory.providers.holographic.contract import (
    ORDER_BY,
    Category,
    Fact,
    FactBackend,
    FactFilter,
    FactOrder,
    FactRows,
    FactTxn,
    FactUpdate,
    clamp,
    fact_from_row,
    load_codec,
    merged_aliases,
    missing_fact,
)

if TYPE_CHECKING:
    from memory.providers.holographic.hrr import HrrCodec

__all__ = ["FactStore"]


_FILE = FileKind(
    what="fact store",
    error=FactStoreError,
    migrations=MIGRATIONS,
    too_new_fix="point memory.providers.holographic.db_path elsewhere",
)

_FACT_COLUMNS = (
    "f.fact_id, f.content, f.category, f.tags, f.trust_score, f.retrieval_count, "
    "f.helpful_count, f.created_at, f.updated_at"
)


@dataclass(frozen=True, slots=True)
class _SqliteTxn:
    """A `FactTxn` over the file's rows (inside its IMMEDIATE transaction)."""

    store: FactStore
    conn: sqlite3.Connection

    def by_content(self, content: str, *, besides: int | None = None) -> int | None:
        row = self.conn.execute(
            "SELECT fact_id FROM facts WHERE content = ? AND fact_id != ?",
            (content, -1 if besides is None else besides),
        ).fetchone()
        return None if row is None else int(row[0])

    def newest(self, limit: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT content FROM facts ORDER BY updated_at DESC, fact_id DESC LIMIT ?", (limit,)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def fact(self, fact_id: int) -> Fact:
        return self.store._facts(self.conn, [self.store._row(self.conn, fact_id)])[0]

    def insert(
        self, content: str, category: Category, tags: str, at: float, entities: Sequence[ExtractedEntity]
    ) -> int:
        cursor = self.conn.execute(
            "INSERT INTO facts(content, category, tags, trust_score, created_at, updated_at, hrr_vector) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                content,
                category,
                tags,
                self.store.default_trust,
                at,
                at,
                self.store._vector_blob(content, entities),
            ),
        )
        fact_id = int(cursor.lastrowid or 0)
        self.store._link(self.conn, fact_id, entities)
        self.store._invalidate_bank(self.conn, category)
        return fact_id

    def change(self, fact_id: int, old: Fact, new: FactUpdate, at: float) -> None:
        self.conn.execute(
            "UPDATE facts SET content = ?, category = ?, tags = ?, trust_score = ?, updated_at = ? WHERE fact_id = ?",
            (new.content, new.category, new.tags, new.trust, at, fact_id),
        )
        if new.content_changed:
            entities = extract_entities(new.content)
            self.conn.execute("DELETE FROM fact_entities WHERE fact_id = ?", (fact_id,))
            self.store._link(self.conn, fact_id, entities)
            self.conn.execute(
                "UPDATE facts SET hrr_vector = ? WHERE fact_id = ?",
                (self.store._vector_blob(new.content, entities), fact_id),
            )
        self.store._invalidate_bank(self.conn, old.category, new.category)

    def remove(self, fact: Fact) -> None:
        self.conn.execute("DELETE FROM facts WHERE fact_id = ?", (fact.fact_id,))
        self.store._invalidate_bank(self.conn, fact.category)

    def trust(self, fact_id: int) -> float:
        return float(self.store._row(self.conn, fact_id)[4])

    def set_trust(self, fact_id: int, trust: float, *, helpful: bool) -> None:
        self.conn.execute(
            "UPDATE facts SET trust_score = ?, helpful_count = helpful_count + ? WHERE fact_id = ?",
            (trust, 1 if helpful else 0, fact_id),
        )

    def count_retrievals(self, fact_ids: Sequence[int]) -> None:
        self.conn.executemany(
            "UPDATE facts SET retrieval_count = retrieval_count + 1 WHERE fact_id = ?",
            [(i,) for i in fact_ids],
        )

    # ------------------------------------------------------------------ reads (`FactRows`)

    def _facts(self, sql: str, params: Sequence[object]) -> tuple[list[Fact], list[Any]]:
        rows = self.conn.execute(sql, params).fetchall()
        return self.store._facts(self.conn, rows), rows

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM facts").fetchone()[0])

    def select(self, order: FactOrder, where: FactFilter, limit: int) -> list[Fact]:
        test, params = _where(where)
        sql = f"SELECT {_FACT_COLUMNS} FROM facts f WHERE {test} ORDER BY {ORDER_BY[order]} LIMIT ?"
        return self._facts(sql, [*params, limit])[0]

    def word_matches(self, terms: Sequence[str], where: FactFilter, limit: int) -> list[tuple[Fact, float]]:
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        test, params = _where(where)
        facts, rows = self._facts(
            f"SELECT {_FACT_COLUMNS}, bm25(facts_fts) AS rank FROM facts_fts "
            f"JOIN facts f ON f.fact_id = facts_fts.rowid WHERE facts_fts MATCH ? AND {test} ORDER BY rank LIMIT ?",
            [match, *params, limit],
        )
        return [(fact, float(row[-1])) for fact, row in zip(facts, rows, strict=True)]

    def substring_matches(
        self, terms: Sequence[str], where: FactFilter, limit: int
    ) -> list[tuple[Fact, int]]:
        hits = " + ".join("(instr(f.content, ?) > 0)" for _ in terms)
        test, params = _where(where)
        facts, rows = self._facts(
            f"SELECT {_FACT_COLUMNS}, ({hits}) AS hits FROM facts f WHERE {test} "
            "AND hits > 0 ORDER BY hits DESC, f.trust_score DESC LIMIT ?",
            [*terms, *params, limit],
        )
        return [(fact, int(row[-1])) for fact, row in zip(facts, rows, strict=True)]

    def by_entity(self, name: str, min_trust: float) -> list[Fact]:
        sql = (
            f"SELECT DISTINCT {_FACT_COLUMNS} FROM facts f JOIN fact_entities fe USING (fact_id) "
            "JOIN entities e USING (entity_id) WHERE f.trust_score >= ? AND (e.name = ? COLLATE NOCASE "
            "OR instr(',' || lower(e.aliases) || ',', ',' || lower(?) || ',') > 0) "
            "ORDER BY f.trust_score DESC"
        )
        return self._facts(sql, (min_trust, name, name))[0]

    def vector_blobs(self, fact_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        found: list[tuple[int, bytes]] = []
        for start in range(0, len(fact_ids), 500):  # stay far below SQLite's bound-parameter limit
            chunk = list(fact_ids[start : start + 500])
            rows = self.conn.execute(
                f"SELECT fact_id, hrr_vector FROM facts WHERE fact_id IN ({','.join('?' * len(chunk))}) "
                "AND hrr_vector IS NOT NULL",
                chunk,
            ).fetchall()
            found += [(int(fact_id), bytes(blob)) for fact_id, blob in rows]
        return found

    def cached_bank(self, category: Category, dim: int) -> bytes | None:
        row = self.conn.execute(
            "SELECT vector, dim FROM memory_banks WHERE bank_name = ?", (f"cat:{category}",)
        ).fetchone()
        return bytes(row[0]) if row is not None and int(row[1]) == dim else None

    def category_vectors(self, category: Category, dim: int) -> list[bytes]:
        # Every stored vector has the store's dimension: opening it re-encodes the others.
        rows = self.conn.execute(
            "SELECT hrr_vector FROM facts WHERE category = ? AND hrr_vector IS NOT NULL", (category,)
        ).fetchall()
        return [bytes(r[0]) for r in rows]

    def save_bank(self, category: Category, vector: bytes, dim: int, facts: int, at: float) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO memory_banks(bank_name, vector, dim, fact_count, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (f"cat:{category}", vector, dim, facts, at),
        )


def _where(where: FactFilter) -> tuple[str, list[object]]:
    sql, params = "f.trust_score >= ?", list[object]([where.min_trust])
    if where.category is not None:
        sql += " AND f.category = ?"
        params.append(where.category)
    return sql, params


class FactStore(FactBackend):
    """Facts, entities and their FTS5 index in one SQLite file (a `FactBackend`). Use `FactStore.open`."""

    def __init__(
        self, file: ProviderFile, *, codec: HrrCodec | None, default_trust: float, now: Callable[[], float]
    ) -> None:
        self._file = file
        self.path = file.path
        self.codec = codec
        self.default_trust = default_trust
        self._now = now

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        dim: int = 1024,
        default_trust: float = 0.5,
        use_numpy: bool | None = None,
        now: Callable[[], float] = time.time,
    ) -> FactStore:
        """Open (creating or migrating) the store at `path`. Blocking: call it in a thread.

        Raises:
            FactStoreError: the file cannot be opened or is not a fact store.
        """
        codec = load_codec(dim, use_numpy)
        file = ProviderFile.open(path, _FILE)
        store = cls(file, codec=codec, default_trust=clamp(default_trust), now=now)
        try:
            if codec is not None:
                store._backfill_vectors(codec)
        except BaseException:
            file.close()
            raise
        return store

    @property
    def location(self) -> str:
        return str(self.path)

    def close(self) -> None:
        self._file.close()

    # ------------------------------------------------------------------ plumbing

    def _db(self, *, write: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        """One transaction (IMMEDIATE for a write)."""
        return self._file.transaction(write=write)

    def _backfill_vectors(self, codec: HrrCodec) -> None:
        """Give every fact a vector of the current dimension (new dim, or facts added without numpy)."""
        with self._db(write=True) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'hrr_dim'").fetchone()
            stale = row is None or row[0] != str(codec.dim)
            where = "" if stale else " WHERE f.hrr_vector IS NULL"
            rows = conn.execute(f"SELECT f.fact_id, f.content FROM facts f{where}").fetchall()
            for fact_id, content in rows:
                names = self._entity_names(conn, [fact_id]).get(fact_id, ())
                blob = codec.to_bytes(codec.encode_fact(content, names))
                conn.execute("UPDATE facts SET hrr_vector = ? WHERE fact_id = ?", (blob, fact_id))
            if stale:
                conn.execute("DELETE FROM memory_banks")
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('hrr_dim', ?)", (str(codec.dim),))

    def _entity_names(self, conn: sqlite3.Connection, fact_ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
        names: dict[int, list[str]] = {}
        for start in range(0, len(fact_ids), 500):
            chunk = list(fact_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                "SELECT fe.fact_id, e.name FROM fact_entities fe JOIN entities e USING (entity_id) "
                f"WHERE fe.fact_id IN ({marks}) ORDER BY fe.rowid",
                chunk,
            ).fetchall()
            for fact_id, name in rows:
                names.setdefault(fact_id, []).append(name)
        return {k: tuple(v) for k, v in names.items()}

    def _facts(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> list[Fact]:
        names = self._entity_names(conn, [int(r[0]) for r in rows])
        return [fact_from_row(r, names.get(int(r[0]), ())) for r in rows]

    def _link(self, conn: sqlite3.Connection, fact_id: int, entities: Sequence[ExtractedEntity]) -> None:
        for entity in entities:
            entity_id = self._resolve_entity(conn, entity)
            conn.execute(
                "INSERT OR IGNORE INTO fact_entities(fact_id, entity_id) VALUES (?, ?)", (fact_id, entity_id)
            )

    def _resolve_entity(self, conn: sqlite3.Connection, entity: ExtractedEntity) -> int:
        """Find an entity by name, then by alias (case-insensitively), else create it."""
        row = conn.execute(
            "SELECT entity_id, aliases FROM entities WHERE name = ? COLLATE NOCASE", (entity.name,)
        ).fetchone()
        if row is None:
            row = conn.execute(
                "SELECT entity_id, aliases FROM entities "
                "WHERE instr(',' || lower(aliases) || ',', ',' || lower(?) || ',') > 0",
                (entity.name,),
            ).fetchone()
        if row is None:
            cursor = conn.execute(
                "INSERT INTO entities(name, aliases, created_at) VALUES (?, ?, ?)",
                (entity.name, merged_aliases("", entity.aliases) or "", self._now()),
            )
            return int(cursor.lastrowid or 0)
        entity_id = int(row[0])
        merged = merged_aliases(str(row[1]), entity.aliases)
        if merged is not None:
            conn.execute("UPDATE entities SET aliases = ? WHERE entity_id = ?", (merged, entity_id))
        return entity_id

    def _vector_blob(self, content: str, entities: Sequence[ExtractedEntity]) -> bytes | None:
        if self.codec is None:
            return None
        return self.codec.to_bytes(self.codec.encode_fact(content, [e.name for e in entities]))

    def _invalidate_bank(self, conn: sqlite3.Connection, *categories: str) -> None:
        for category in categories:
            conn.execute("DELETE FROM memory_banks WHERE bank_name = ?", (f"cat:{category}",))

    def _row(self, conn: sqlite3.Connection, fact_id: int) -> tuple[Any, ...]:
        row = conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts f WHERE f.fact_id = ?", (fact_id,)).fetchone()
        if row is None:
            raise missing_fact(fact_id)
        return tuple(row)

    # ------------------------------------------------------------------ transactions

    def _write(self, *, ordered: bool = True) -> AbstractContextManager[FactTxn]:
        return self._rows(write=True)

    def _read(self) -> AbstractContextManager[FactRows]:
        return self._rows(write=False)

    def _banks(self) -> AbstractContextManager[FactRows]:
        return self._rows(write=True)  # a stale bank is rebuilt and kept in the same transaction

    @contextmanager
    def _rows(self, *, write: bool) -> Iterator[_SqliteTxn]:
        with self._db(write=write) as conn:
            yield _SqliteTxn(self, conn)
