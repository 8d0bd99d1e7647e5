"""What copying one user's provider file into PostgreSQL shares (`keel storage migrate`),
whichever provider it is: reading a copy of the file at this keel's schema version, the hash
its rows are verified by, and the one transaction that writes a scope or compares it.

`holographic._copy` and `semantic._copy` say only what differs: their tables, their columns
and how a row's last column (a vector, an embedding) becomes bytes. The order is the same
for both and is the specification:

1. the caller's copy of the file is migrated to this keel's version (a file from a newer
   keel is refused) and read in one snapshot;
2. in one transaction under the scope's writer row: a scope written before is only compared
   (the same hash is `skipped`, another is a `conflict` and nothing is written); else the
   rows are inserted and ids continue after the file's;
3. the rows are read back in that transaction and checked: their count, the hash over every
   column and the last column's bytes, and the count of the side table (entity links,
   history).

Blocking: `keel storage migrate` runs it from a worker thread.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from memory._migrations import Migration, migrate_sqlite
from memory._sqlite import LockRetryPolicy, SqliteConnection
from memory.providers._pg import (
    Conn,
    PgPlace,
    ScopeCopy,
    StoreKind,
    claim,
    first_line,
    scope_exists,
    set_next_id,
    transaction,
)

__all__ = ["CopyPlan", "copy_scope", "next_free_id", "read_copy", "rows_digest"]

T = TypeVar("T")
Row = tuple[object, ...]
Blob = Callable[[object], bytes | None]
"""A row's last column as bytes to hash (None: the row has none)."""
StoreError = Callable[[str], Exception]
"""The provider's store error, built from a message."""


def rows_digest(rows: Sequence[Sequence[object]], blob: Blob) -> str:
    """The hash rows are verified by: every column in id (first column) order, the last
    column by the SHA-256 of its bytes (an empty cell when `blob` gives None)."""
    h = hashlib.sha256()
    for r in sorted(rows, key=lambda r: int(str(r[0]))):
        cells = [str(c) if isinstance(c, str) else repr(c) for c in r[:-1]]
        data = blob(r[-1])
        cells.append("" if data is None else hashlib.sha256(data).hexdigest())
        h.update(json.dumps(cells, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def next_free_id(conn: sqlite3.Connection, table: str, ids: Sequence[int]) -> int:
    """The id after every one the file used: its rows' and its AUTOINCREMENT counter's
    (ids of deleted rows are never given again, in the file or on the server)."""
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
    return max([*ids, 0 if seq is None else int(seq[0])]) + 1


def read_copy(
    path: Path,
    migrations: Sequence[Migration],
    dump: Callable[[sqlite3.Connection], T],
    *,
    what: str,
    error: StoreError,
) -> T:
    """`dump` of the file at `path` (a copy: it is migrated in place), in one snapshot.

    Raises:
        Exception: `error(message)` when the file cannot be read or is from a newer keel.
    """

    def translate(exc: sqlite3.Error, where: Path) -> Exception:
        return error(f"cannot read the {what} copy {str(where)!r}: {exc}")

    def too_new(found: int, known: int) -> Exception:
        return error(
            f"{str(path)!r} has {what} schema version {found}, newer than this keel ({known}); "
            "upgrade keel before migrating"
        )

    conn = SqliteConnection.connect(path, retry=LockRetryPolicy(), translate=translate)
    try:
        with conn.transaction(write=True) as c:
            migrate_sqlite(c, migrations, too_new=too_new)
        return conn.read(dump)
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class CopyPlan:
    """One provider file's rows, ready to copy into a scope.

    Attributes:
        store: which of the scope's stores (`facts`, `semantic`) the rows go to.
        rows: the main rows (facts, memories), id first, the hashed bytes last.
        blob: the last column as bytes (`rows_digest`).
        next_id: where the scope's ids continue (`next_free_id`).
        insert: writes every row of the file into the scope (the main rows and the side table).
        read_back: the scope's main rows, in the columns of `rows`.
        side_table: the table whose rows of the scope are counted after the copy.
        side_rows: how many it must then hold.
    """

    store: StoreKind
    rows: Sequence[Row]
    blob: Blob
    next_id: int
    insert: Callable[[Conn], None]
    read_back: Callable[[Conn], list[Row]]
    side_table: str
    side_rows: int


def copy_scope(source: Path, place: PgPlace, scope: str, plan: CopyPlan, *, error: StoreError) -> ScopeCopy:
    """Copy `plan`'s rows (read from `source`) into `scope`, or compare them with what is there.

    Raises:
        Exception: `error(message)` when the server failed (nothing was written).
    """
    wanted = rows_digest(plan.rows, plan.blob)

    def fail(exc: BaseException) -> Exception:
        return error(f"copying {str(source)!r} into scope {scope!r} failed: {first_line(exc)}")

    with transaction(place, fail) as conn:
        if scope_exists(conn, scope, plan.store):
            same = rows_digest(plan.read_back(conn), plan.blob) == wanted
            return ScopeCopy("skipped" if same else "conflict", True, len(plan.rows))
        claim(conn, scope, plan.store)
        plan.insert(conn)
        set_next_id(conn, scope, plan.store, plan.next_id)
        # `side_table` is one of the callers' constant table names, never input.
        side = conn.execute(f"SELECT count(*) FROM {plan.side_table} WHERE scope = %s", (scope,)).fetchone()
        copied = plan.read_back(conn)
    verified = (
        len(copied) == len(plan.rows)
        and rows_digest(copied, plan.blob) == wanted
        and side is not None
        and int(str(side[0])) == plan.side_rows
    )
    return ScopeCopy("copied", verified, len(plan.rows))
