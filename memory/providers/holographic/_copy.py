"""`copy_facts`: one user's `memory_store.db` copied into PostgreSQL rows (`keel storage migrate`).

The caller passes a *copy* of the file (the home is never opened for writing): it is brought
to this keel's schema version (a file from a newer keel is refused) and read in one snapshot.
Facts keep their ids, contents, categories, tags, trust, counters, timestamps and vectors;
entities and their links are copied in link order; category banks are not (they are rebuilt
from the vectors on first use). The order of the copy and its checks (the fact count, a
SHA-256 over every fact's columns and vector bytes, the link count) are shared with the
semantic memories: `memory.providers._copy`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from memory.errors import FactStoreError
from memory.providers._copy import CopyPlan, copy_scope, next_free_id, read_copy
from memory.providers._pg import Conn, PgPlace, ScopeCopy
from memory.providers.holographic._schema import MIGRATIONS

__all__ = ["copy_facts"]

_FACT_COLUMNS = (
    "fact_id, content, category, tags, trust_score, retrieval_count, helpful_count, created_at, updated_at, "
    "hrr_vector"
)


@dataclass(frozen=True, slots=True)
class _Dump:
    facts: list[tuple[object, ...]]
    dim: int | None
    entities: list[tuple[object, ...]]
    links: list[tuple[int, int]]
    next_id: int


def _vector_bytes(value: object) -> bytes | None:
    """A fact's vector as stored (facts added without numpy have none)."""
    return bytes(value) if isinstance(value, bytes | memoryview) else None


def _dump(conn: sqlite3.Connection) -> _Dump:
    facts = [tuple(r) for r in conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts ORDER BY fact_id")]
    meta = conn.execute("SELECT value FROM meta WHERE key = 'hrr_dim'").fetchone()
    entities = [
        tuple(r)
        for r in conn.execute(
            "SELECT entity_id, name, entity_type, aliases, created_at FROM entities ORDER BY entity_id"
        )
    ]
    links = [
        (int(a), int(b))
        for a, b in conn.execute("SELECT fact_id, entity_id FROM fact_entities ORDER BY rowid")
    ]
    top = next_free_id(conn, "facts", [int(str(f[0])) for f in facts])
    return _Dump(facts, None if meta is None else int(meta[0]), entities, links, top)


def _scope_facts(conn: Conn, scope: str) -> list[tuple[object, ...]]:
    rows = conn.execute(
        f"SELECT {_FACT_COLUMNS} FROM holo_facts WHERE scope = %s ORDER BY fact_id", (scope,)
    ).fetchall()
    return [tuple(r) for r in rows]


def _insert(conn: Conn, scope: str, dump: _Dump) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO holo_facts (scope, fact_id, content, category, tags, trust_score, retrieval_count, "
            "helpful_count, created_at, updated_at, hrr_vector, hrr_dim) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(scope, *f, None if f[9] is None else dump.dim) for f in dump.facts],
        )
    entity_ids: dict[int, int] = {}
    for entity_id, name, entity_type, aliases, created_at in dump.entities:
        row = conn.execute(
            "INSERT INTO holo_entities (scope, name, entity_type, aliases, created_at) "
            "VALUES (%s, %s, %s, %s, %s) RETURNING entity_id",
            (scope, name, entity_type, aliases, created_at),
        ).fetchone()
        assert row is not None
        entity_ids[int(str(entity_id))] = int(row[0])
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO holo_fact_entities (scope, fact_id, entity_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            [
                (scope, fact_id, entity_ids[entity_id])
                for fact_id, entity_id in dump.links
                if entity_id in entity_ids
            ],
        )


def copy_facts(source: Path, place: PgPlace, scope: str) -> ScopeCopy:
    """Copy the fact store at `source` (a copy the caller may change) into `scope`. Blocking.

    Raises:
        FactStoreError: the file cannot be read, is from a newer keel, or the server failed.
    """
    dump = read_copy(source, MIGRATIONS, _dump, what="fact store", error=FactStoreError)
    known = {int(str(e[0])) for e in dump.entities}
    plan = CopyPlan(
        store="facts",
        rows=dump.facts,
        blob=_vector_bytes,
        next_id=dump.next_id,
        insert=lambda conn: _insert(conn, scope, dump),
        read_back=lambda conn: _scope_facts(conn, scope),
        side_table="holo_fact_entities",
        side_rows=len({link for link in dump.links if link[1] in known}),
    )
    return copy_scope(source, place, scope, plan, error=FactStoreError)
