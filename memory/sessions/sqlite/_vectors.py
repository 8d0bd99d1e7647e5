"""`SqliteVectors`: message vectors in `state.db` as plain blobs, searched with numpy.

Why not a vector extension: sqlite-vec (PyPI) is a loadable extension, and the CPython
builds keel runs on here have no `enable_load_extension` (the pyenv build on the
development machines and CI); keel would need another SQLite binding for it. Plain blobs
work on every build, and the sign-code prefilter (`memory.sessions.dense.codes`) keeps a
million-message search under the latency goal (`benchmarks/search_scale.py`).

The table is derived data: created on first use, emptied when the embedding model
changes (`state_meta` key `dense:model`), refilled by the indexer. It has its own
connection (WAL: searches never wait for the session's writes, and the indexer's batch
writes wait at most the busy timeout).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast

import anyio
import anyio.to_thread
import numpy as np

from memory._sqlite import LockRetryPolicy, SqliteConnection
from memory.sessions.dense.contract import EMBEDDED_ROLES, CandidateRow, PendingMessage, VectorRow

__all__ = ["SqliteVectors"]

T = TypeVar("T")

_TABLE = """CREATE TABLE IF NOT EXISTS message_vectors (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
    vec BLOB NOT NULL,
    code BLOB NOT NULL
)"""
_MODEL_KEY = "dense:model"
_ROLES = ", ".join(f"'{r}'" for r in EMBEDDED_ROLES)
_EMBEDDABLE = f"m.role IN ({_ROLES}) AND m.content != ''"
_TEXT_CHARS = 2000  # the model reads at most 256 tokens; the tokenizer need not see more


class SqliteVectors:
    """The `message_vectors` table of one `state.db` (a `VectorStore`).

    Args:
        path: the database file (the session store's `SessionDB.path`).
    """

    kind = "float16 blobs in state.db, sign-code prefilter + exact cosine in numpy"

    def __init__(self, path: Path) -> None:
        self._path = path
        self._conn: SqliteConnection | None = None
        self._limiter = anyio.CapacityLimiter(1)

    async def _run(self, fn: Callable[[SqliteConnection], T]) -> T:
        def call() -> T:
            if self._conn is None:
                self._conn = SqliteConnection.connect(self._path, retry=LockRetryPolicy())
            return fn(self._conn)

        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    async def prepare(self, model_id: str) -> None:
        def work(c: sqlite3.Connection) -> None:
            c.execute(_TABLE)
            row = c.execute("SELECT value FROM state_meta WHERE key = ?", (_MODEL_KEY,)).fetchone()
            if row is not None and row[0] != model_id:
                c.execute("DELETE FROM message_vectors")
            c.execute(
                "INSERT INTO state_meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (_MODEL_KEY, model_id),
            )

        await self._run(lambda conn: conn.write(work))

    async def pending(self, *, after: int, limit: int) -> list[PendingMessage]:
        sql = (
            f"SELECT m.id, substr(m.content, 1, {_TEXT_CHARS}) FROM messages m "
            f"WHERE m.id > ? AND {_EMBEDDABLE} "
            "AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id) "
            "ORDER BY m.id LIMIT ?"
        )
        rows = await self._run(lambda conn: conn.read(lambda c: c.execute(sql, (after, limit)).fetchall()))
        return [PendingMessage(int(r[0]), str(r[1])) for r in rows]

    async def put(self, rows: Sequence[VectorRow]) -> None:
        sql = (
            "INSERT INTO message_vectors (message_id, vec, code) "
            "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?) "
            "ON CONFLICT (message_id) DO UPDATE SET vec = excluded.vec, code = excluded.code"
        )
        args = [(r.message_id, r.vector.astype(np.float16).tobytes(), r.code, r.message_id) for r in rows]
        await self._run(lambda conn: conn.write(lambda c: c.executemany(sql, args)))

    async def codes_since(self, after: int) -> tuple[list[int], list[int], list[bytes]]:
        sql = "SELECT id, message_id, code FROM message_vectors WHERE id > ? ORDER BY id"
        rows = await self._run(lambda conn: conn.read(lambda c: c.execute(sql, (after,)).fetchall()))
        return [int(r[0]) for r in rows], [int(r[1]) for r in rows], [bytes(r[2]) for r in rows]

    async def candidates(self, rows: Sequence[int], *, user_ids: Sequence[str] | None) -> list[CandidateRow]:
        if not rows:
            return []
        # By the vector's own row id (the prefilter has it): one lookup per candidate fewer.
        sql = (
            "SELECT m.id, m.session_id, m.seq, m.role, m.timestamp, v.vec "
            "FROM json_each(?) j JOIN message_vectors v ON v.id = j.value JOIN messages m ON m.id = v.message_id"
        )
        args: list[object] = [json.dumps(list(rows))]
        if user_ids is not None:
            marks = ", ".join("?" for _ in user_ids)
            sql += f" JOIN sessions s ON s.id = m.session_id WHERE s.user_id IN ({marks})"
            args += list(user_ids)

        def read(c: sqlite3.Connection) -> list[tuple[object, ...]]:
            return c.execute(sql, args).fetchall()

        found = await self._run(lambda conn: conn.read(read))
        return [
            CandidateRow.from_row(r, np.frombuffer(cast(bytes, r[5]), dtype=np.float16).astype(np.float32))
            for r in found
        ]

    async def counts(self) -> tuple[int, int]:
        def read(c: sqlite3.Connection) -> tuple[int, int]:
            (done,) = c.execute("SELECT count(*) FROM message_vectors").fetchone()
            (total,) = c.execute(f"SELECT count(*) FROM messages m WHERE {_EMBEDDABLE}").fetchone()
            return int(done), int(total)

        return await self._run(lambda conn: conn.read(read))

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(conn.close, limiter=self._limiter)
