"""`copy_facts`: one user's `memory_store.db` copied into PostgreSQL rows (`keel storage migrate`).

The caller passes a *copy* of the file (the home is never opened for writing): it is brought
to this keel's schema version (a file from a newer keel is refused) and read in one snapshot.
Facts keep their ids, contents, categories, tags, trust, counters, timestamps and vectors;
entities and their links are copied in link order; category banks are not (they are rebuilt
from the vectors on first use). Everything lands in one transaction under the scope's writer
row, then is read back and checked: the fact count and a SHA-256 over every fact's columns
and vector bytes, and the link count. A scope written before is compared instead: the same
hash is `skipped`, another is a `conflict` and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory._migrations import migrate_sqlite
from memory._sqlite import LockRetryPolicy, SqliteConnection
from memory.errors import FactStoreError
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
from memory.providers.holographic._schema import MIGRATIONS

__all__ = ["copy_facts", "facts_digest"]

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


def facts_digest(rows: Sequence[Sequence[object]]) -> str:
    """The hash facts are verified by: every column in `fact_id` order, vectors by their SHA-256."""
    h = hashlib.sha256()
    for r in sorted(rows, key=lambda r: int(str(r[0]))):
        vector = r[9]
        cells = [*(str(c) if isinstance(c, str) else repr(c) for c in r[:9])]
        cells.append(
            hashlib.sha256(bytes(vector)).hexdigest() if isinstance(vector, bytes | memoryview) else ""
        )
        h.update(json.dumps(cells, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def _translate(exc: sqlite3.Error, path: Path) -> FactStoreError:
    return FactStoreError(f"cannot read the fact store copy {str(path)!r}: {exc}")


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
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'facts'").fetchone()
    top = max([int(str(f[0])) for f in facts] + [0 if seq is None else int(seq[0])])
    return _Dump(facts, None if meta is None else int(meta[0]), entities, links, top + 1)


def _read(path: Path) -> _Dump:
    conn = SqliteConnection.connect(path, retry=LockRetryPolicy(), translate=_translate)
    try:
        with conn.transaction(write=True) as c:
            migrate_sqlite(
                c,
                MIGRATIONS,
                too_new=lambda found, known: FactStoreError(
                    f"{str(path)!r} has fact store schema version {found}, newer than this keel ({known}); "
                    "upgrade keel before migrating"
                ),
            )
        return conn.read(_dump)
    finally:
        conn.close()


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
    dump = _read(source)
    wanted = facts_digest(dump.facts)

    def fail(exc: BaseException) -> FactStoreError:
        return FactStoreError(f"copying {str(source)!r} into scope {scope!r} failed: {first_line(exc)}")

    with transaction(place, fail) as conn:
        if scope_exists(conn, scope, "facts"):
            same = facts_digest(_scope_facts(conn, scope)) == wanted
            return ScopeCopy("skipped" if same else "conflict", True, len(dump.facts))
        claim(conn, scope, "facts")
        _insert(conn, scope, dump)
        set_next_id(conn, scope, "facts", dump.next_id)
        links = conn.execute("SELECT count(*) FROM holo_fact_entities WHERE scope = %s", (scope,)).fetchone()
        copied = _scope_facts(conn, scope)
    known = {int(str(e[0])) for e in dump.entities}
    linked = len({link for link in dump.links if link[1] in known})
    verified = (
        len(copied) == len(dump.facts)
        and facts_digest(copied) == wanted
        and links is not None
        and int(links[0]) == linked
    )
    return ScopeCopy("copied", verified, len(dump.facts))
