"""`PgFactStore`: the holographic facts of one user as rows of the keel PostgreSQL schema.

The same `FactBackend` as the SQLite file (`store.py`), over the `holo_*` tables of
migration 5 (`memory.providers._pg` describes the scope, the writer row and the ids):

- `holo_facts`: one row per fact, keyed by (scope, fact_id), unique content per scope (by
  MD5, so long facts fit the index), the HRR vector as the codec's bytes with its dimension,
  and a generated `tsvector` over content and tags (English stemming, as FTS5's Porter
  tokenizer: "works" finds "work") with a GIN index;
- `holo_entities` + `holo_fact_entities`: the names pulled out of each fact, with aliases,
  in the order they were linked;
- `holo_banks`: one bundled vector per category, valid while the scope's write generation
  is the one it was built at (no invalidation step a crash could skip).

Every content write first takes the scope's writer row (`claim`): one user's writers are
ordered across machines exactly as the SQLite file's write lock ordered them on one.
Blocking: the provider calls it from worker threads. psycopg errors leave as `FactStoreError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from psycopg.rows import TupleRow

from memory.errors import FactStoreError
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
from memory.providers.holographic._entities import ExtractedEntity, extract_entities
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

__all__ = ["PgFactStore"]

_COLUMNS = (
    "f.fact_id, f.content, f.category, f.tags, f.trust_score, f.retrieval_count, "
    "f.helpful_count, f.created_at, f.updated_at"
)
_SAME_CONTENT = "f.scope = %s AND f.content_md5 = md5(%s) AND f.content = %s"
_ENTITY_MATCH = (
    "(lower(e.name) = lower(%s) OR strpos(',' || lower(e.aliases) || ',', ',' || lower(%s) || ',') > 0)"
)


_KIND = ScopeKind(store="facts", what="fact store", table="holo_facts", tables="fact", error=FactStoreError)


@dataclass(slots=True)
class _PgTxn:
    """A `FactTxn` over one scope's rows (the writer row taken, except for a feedback and a read)."""

    store: PgFactStore
    conn: Conn
    seen_generation: int = 0
    """The scope's write generation as `cached_bank` read it (what a rebuilt bank is stamped with)."""

    @property
    def scope(self) -> str:
        return self.store.scope

    def by_content(self, content: str, *, besides: int | None = None) -> int | None:
        row = self.conn.execute(
            f"SELECT f.fact_id FROM holo_facts f WHERE {_SAME_CONTENT} AND f.fact_id <> %s",
            (self.scope, content, content, -1 if besides is None else besides),
        ).fetchone()
        return None if row is None else int(str(row[0]))

    def newest(self, limit: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT content FROM holo_facts WHERE scope = %s ORDER BY updated_at DESC, fact_id DESC LIMIT %s",
            (self.scope, limit),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def fact(self, fact_id: int) -> Fact:
        return self.store._facts(self.conn, [self.store._row(self.conn, fact_id)])[0]

    def insert(
        self, content: str, category: Category, tags: str, at: float, entities: Sequence[ExtractedEntity]
    ) -> int:
        fact_id = next_id(self.conn, self.scope, "facts")
        blob, dim = self.store._vector(content, entities)
        trust = self.store.default_trust
        self.conn.execute(
            "INSERT INTO holo_facts (scope, fact_id, content, category, tags, trust_score, created_at, "
            "updated_at, hrr_vector, hrr_dim) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (self.scope, fact_id, content, category, tags, trust, at, at, blob, dim),
        )
        self.store._link(self.conn, fact_id, entities)
        return fact_id

    def change(self, fact_id: int, old: Fact, new: FactUpdate, at: float) -> None:
        self.conn.execute(
            "UPDATE holo_facts SET content = %s, category = %s, tags = %s, trust_score = %s, updated_at = %s "
            "WHERE scope = %s AND fact_id = %s",
            (new.content, new.category, new.tags, new.trust, at, self.scope, fact_id),
        )
        if new.content_changed:  # new content: new entities, a new vector
            entities = extract_entities(new.content)
            self.conn.execute(
                "DELETE FROM holo_fact_entities WHERE scope = %s AND fact_id = %s", (self.scope, fact_id)
            )
            self.store._link(self.conn, fact_id, entities)
            blob, dim = self.store._vector(new.content, entities)
            self.conn.execute(
                "UPDATE holo_facts SET hrr_vector = %s, hrr_dim = %s WHERE scope = %s AND fact_id = %s",
                (blob, dim, self.scope, fact_id),
            )

    def remove(self, fact: Fact) -> None:
        self.conn.execute(
            "DELETE FROM holo_facts WHERE scope = %s AND fact_id = %s", (self.scope, fact.fact_id)
        )

    def trust(self, fact_id: int) -> float:
        row = self.conn.execute(
            "SELECT trust_score FROM holo_facts WHERE scope = %s AND fact_id = %s FOR UPDATE",
            (self.scope, fact_id),
        ).fetchone()
        if row is None:
            raise missing_fact(fact_id)
        return float(str(row[0]))

    def set_trust(self, fact_id: int, trust: float, *, helpful: bool) -> None:
        self.conn.execute(
            "UPDATE holo_facts SET trust_score = %s, helpful_count = helpful_count + %s "
            "WHERE scope = %s AND fact_id = %s",
            (trust, 1 if helpful else 0, self.scope, fact_id),
        )

    def count_retrievals(self, fact_ids: Sequence[int]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "UPDATE holo_facts SET retrieval_count = retrieval_count + 1 WHERE scope = %s AND fact_id = %s",
                [(self.scope, i) for i in fact_ids],
            )

    # ------------------------------------------------------------------ reads (`FactRows`)

    def _facts(self, sql: str, params: Sequence[object]) -> tuple[list[Fact], list[TupleRow]]:
        rows = self.conn.execute(sql, params).fetchall()
        return self.store._facts(self.conn, rows), rows

    def _where(self, where: FactFilter) -> tuple[str, list[object]]:
        sql, params = "f.scope = %s AND f.trust_score >= %s", [self.scope, where.min_trust]
        if where.category is not None:
            sql += " AND f.category = %s"
            params.append(where.category)
        return sql, params

    def count(self) -> int:
        row = self.conn.execute("SELECT count(*) FROM holo_facts WHERE scope = %s", (self.scope,)).fetchone()
        return 0 if row is None else int(str(row[0]))

    def select(self, order: FactOrder, where: FactFilter, limit: int) -> list[Fact]:
        test, params = self._where(where)
        sql = f"SELECT {_COLUMNS} FROM holo_facts f WHERE {test} ORDER BY {ORDER_BY[order]} LIMIT %s"
        return self._facts(sql, [*params, limit])[0]

    def word_matches(self, terms: Sequence[str], where: FactFilter, limit: int) -> list[tuple[Fact, float]]:
        query, words = any_words(terms)
        test, params = self._where(where)
        facts, rows = self._facts(
            f"SELECT {_COLUMNS}, ts_rank(f.search_tsv, q.q) AS rank FROM holo_facts f, (SELECT {query} AS q) q "
            f"WHERE {test} AND f.search_tsv @@ q.q ORDER BY rank DESC, f.fact_id LIMIT %s",
            [*words, *params, limit],
        )
        return [(fact, float(str(row[-1]))) for fact, row in zip(facts, rows, strict=True)]

    def substring_matches(
        self, terms: Sequence[str], where: FactFilter, limit: int
    ) -> list[tuple[Fact, int]]:
        hits = " + ".join("(strpos(f.content, %s) > 0)::int" for _ in terms)
        test, params = self._where(where)
        facts, rows = self._facts(
            f"SELECT * FROM (SELECT {_COLUMNS}, ({hits}) AS hits FROM holo_facts f WHERE {test}) t "
            "WHERE hits > 0 ORDER BY hits DESC, trust_score DESC, fact_id LIMIT %s",
            [*terms, *params, limit],
        )
        return [(fact, int(str(row[-1]))) for fact, row in zip(facts, rows, strict=True)]

    def by_entity(self, name: str, min_trust: float) -> list[Fact]:
        sql = (
            f"SELECT DISTINCT {_COLUMNS} FROM holo_facts f JOIN holo_fact_entities fe "
            "ON fe.scope = f.scope AND fe.fact_id = f.fact_id JOIN holo_entities e ON e.entity_id = fe.entity_id "
            f"WHERE f.scope = %s AND f.trust_score >= %s AND {_ENTITY_MATCH} ORDER BY f.trust_score DESC, f.fact_id"
        )
        return self._facts(sql, (self.scope, min_trust, name, name))[0]

    def vector_blobs(self, fact_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        rows = self.conn.execute(
            "SELECT fact_id, hrr_vector FROM holo_facts WHERE scope = %s AND fact_id = ANY(%s) "
            "AND hrr_vector IS NOT NULL",
            (self.scope, list(fact_ids)),
        ).fetchall()
        return [(int(str(fact_id)), bytes(blob)) for fact_id, blob in rows]

    def cached_bank(self, category: Category, dim: int) -> bytes | None:
        # A bank is valid while the scope's write generation is the one it was built at; the
        # generation is read first, so a bank rebuilt now is stamped with no newer one.
        self.seen_generation = generation(self.conn, self.scope, "facts")
        row = self.conn.execute(
            "SELECT vector, dim, generation FROM holo_banks WHERE scope = %s AND category = %s",
            (self.scope, category),
        ).fetchone()
        if row is not None and int(str(row[1])) == dim and int(str(row[2])) == self.seen_generation:
            return bytes(row[0])
        return None

    def category_vectors(self, category: Category, dim: int) -> list[bytes]:
        rows = self.conn.execute(
            "SELECT hrr_vector FROM holo_facts WHERE scope = %s AND category = %s AND hrr_dim = %s",
            (self.scope, category, dim),
        ).fetchall()
        return [bytes(r[0]) for r in rows]

    def save_bank(self, category: Category, vector: bytes, dim: int, facts: int, at: float) -> None:
        self.conn.execute(
            "INSERT INTO holo_banks (scope, category, vector, dim, fact_count, generation, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (scope, category) DO UPDATE SET "
            "vector = excluded.vector, dim = excluded.dim, fact_count = excluded.fact_count, "
            "generation = excluded.generation, updated_at = excluded.updated_at",
            (self.scope, category, vector, dim, facts, self.seen_generation, at),
        )


class PgFactStore(FactBackend):
    """One user's facts in PostgreSQL (a `FactBackend`). Use `PgFactStore.open`.

    The pool belongs to the caller: `close` only stops this store from being used.
    """

    def __init__(
        self, rows: ProviderScope, *, codec: HrrCodec | None, default_trust: float, now: Callable[[], float]
    ) -> None:
        self._scoped = rows
        self.scope = rows.scope
        self.codec = codec
        self.default_trust = default_trust
        self._now = now

    @classmethod
    def open(
        cls,
        place: PgPlace,
        *,
        user_id: str | None,
        dim: int = 1024,
        default_trust: float = 0.5,
        use_numpy: bool | None = None,
        now: Callable[[], float] = time.time,
    ) -> PgFactStore:
        """The facts of `user_id` in `place` (the schema is migrated by whoever opened the
        stores). Blocking: call it in a thread.

        Raises:
            ValueError: `user_id` is not a safe directory name.
            FactStoreError: the server cannot be used, or the schema has no fact tables.
        """
        store = cls(
            ProviderScope(place, provider_scope(user_id), _KIND),
            codec=load_codec(dim, use_numpy),
            default_trust=clamp(default_trust),
            now=now,
        )
        if store.codec is not None:
            store._backfill_vectors(store.codec)
        else:
            store.count()  # fail at open, not at the first turn
        return store

    @property
    def location(self) -> str:
        return self._scoped.location

    def close(self) -> None:
        self._scoped.close()

    # ------------------------------------------------------------------ plumbing

    def _db(self, *, write: bool = False) -> AbstractContextManager[Conn]:
        """One transaction; a content write first takes the scope's writer row."""
        return self._scoped.transaction(write=write)

    def _backfill_vectors(self, codec: HrrCodec) -> None:
        """Give every fact of the scope a vector of the current dimension."""
        stale = "scope = %s AND (hrr_vector IS NULL OR hrr_dim IS DISTINCT FROM %s)"
        with self._db() as conn:
            row = conn.execute(f"SELECT count(*) FROM holo_facts WHERE {stale}", (self.scope, codec.dim))
            found = row.fetchone()
        if found is None or int(str(found[0])) == 0:
            return  # the common case: no write, no writer row
        with self._db(write=True) as conn:
            rows = conn.execute(
                f"SELECT fact_id, content FROM holo_facts WHERE {stale}", (self.scope, codec.dim)
            ).fetchall()
            names = self._entity_names(conn, [int(str(r[0])) for r in rows])
            for fact_id, content in rows:
                blob = codec.to_bytes(codec.encode_fact(str(content), names.get(int(str(fact_id)), ())))
                conn.execute(
                    "UPDATE holo_facts SET hrr_vector = %s, hrr_dim = %s WHERE scope = %s AND fact_id = %s",
                    (blob, codec.dim, self.scope, fact_id),
                )

    def _entity_names(self, conn: Conn, fact_ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
        if not fact_ids:
            return {}
        rows = conn.execute(
            "SELECT fe.fact_id, e.name FROM holo_fact_entities fe JOIN holo_entities e USING (entity_id) "
            "WHERE fe.scope = %s AND fe.fact_id = ANY(%s) ORDER BY fe.link_id",
            (self.scope, list(fact_ids)),
        ).fetchall()
        names: dict[int, list[str]] = {}
        for fact_id, name in rows:
            names.setdefault(int(str(fact_id)), []).append(str(name))
        return {k: tuple(v) for k, v in names.items()}

    def _facts(self, conn: Conn, rows: Sequence[Sequence[object]]) -> list[Fact]:
        names = self._entity_names(conn, [int(str(r[0])) for r in rows])
        return [fact_from_row(r, names.get(int(str(r[0])), ())) for r in rows]

    def _row(self, conn: Conn, fact_id: int) -> Sequence[object]:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM holo_facts f WHERE f.scope = %s AND f.fact_id = %s",
            (self.scope, fact_id),
        ).fetchone()
        if row is None:
            raise missing_fact(fact_id)
        return row

    def _link(self, conn: Conn, fact_id: int, entities: Sequence[ExtractedEntity]) -> None:
        for entity in entities:
            conn.execute(
                "INSERT INTO holo_fact_entities (scope, fact_id, entity_id) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (self.scope, fact_id, self._resolve_entity(conn, entity)),
            )

    def _resolve_entity(self, conn: Conn, entity: ExtractedEntity) -> int:
        """Find an entity by name, then by alias (case-insensitively), else create it."""
        row = conn.execute(
            "SELECT entity_id, aliases FROM holo_entities e WHERE e.scope = %s AND lower(e.name) = lower(%s) "
            "ORDER BY entity_id LIMIT 1",
            (self.scope, entity.name),
        ).fetchone()
        if row is None:
            row = conn.execute(
                "SELECT entity_id, aliases FROM holo_entities e WHERE e.scope = %s AND "
                "strpos(',' || lower(e.aliases) || ',', ',' || lower(%s) || ',') > 0 ORDER BY entity_id LIMIT 1",
                (self.scope, entity.name),
            ).fetchone()
        if row is None:
            created = conn.execute(
                "INSERT INTO holo_entities (scope, name, aliases, created_at) VALUES (%s, %s, %s, %s) "
                "RETURNING entity_id",
                (self.scope, entity.name, merged_aliases("", entity.aliases) or "", self._now()),
            ).fetchone()
            assert created is not None
            return int(str(created[0]))
        entity_id = int(str(row[0]))
        merged = merged_aliases(str(row[1]), entity.aliases)
        if merged is not None:
            conn.execute("UPDATE holo_entities SET aliases = %s WHERE entity_id = %s", (merged, entity_id))
        return entity_id

    def _vector(self, content: str, entities: Sequence[ExtractedEntity]) -> tuple[bytes | None, int | None]:
        if self.codec is None:
            return None, None
        vector = self.codec.encode_fact(content, [e.name for e in entities])
        return self.codec.to_bytes(vector), self.codec.dim

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def _write(self, *, ordered: bool = True) -> Iterator[FactTxn]:
        # A feedback needs only its fact's row lock (`trust` takes it), not the writer row.
        with self._db(write=ordered) as conn:
            yield _PgTxn(self, conn)

    def _read(self) -> AbstractContextManager[FactRows]:
        return self._write(ordered=False)  # no writer row: the same transaction as a feedback's

    def _banks(self) -> AbstractContextManager[FactRows]:
        return self._read()  # a bank is kept with the generation it was built at, not invalidated
