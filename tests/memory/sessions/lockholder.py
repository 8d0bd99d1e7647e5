"""Other clients holding locks on a real store (for tests of refused writes): a process with
`BEGIN EXCLUSIVE` (or `IMMEDIATE`) on state.db, a PostgreSQL connection with a table locked."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Literal

import anyio
import psycopg
from anyio.abc import Process
from psycopg import sql

__all__ = ["exclusive_lock", "table_locked"]

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute(f"BEGIN {sys.argv[2]}")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


@asynccontextmanager
async def exclusive_lock(
    path: Path, *, mode: Literal["EXCLUSIVE", "IMMEDIATE"] = "EXCLUSIVE"
) -> AsyncIterator[Process]:
    """Another process holding `BEGIN EXCLUSIVE` (or `IMMEDIATE`: readers may still read) on
    `path` for the duration of the block."""
    holder = await anyio.open_process([sys.executable, "-c", HOLDER, str(path), mode])
    try:
        assert holder.stdout is not None
        with anyio.fail_after(30):
            assert (await holder.stdout.receive()).strip() == b"locked"
        yield holder
    finally:
        assert holder.stdin is not None
        await holder.stdin.send(b"go\n")
        await holder.stdin.aclose()
        with anyio.fail_after(30):
            await holder.wait()


@contextmanager
def table_locked(url: str, schema: str) -> Iterator[None]:
    """Another client holding an exclusive lock on the messages table, in an open transaction."""
    with psycopg.connect(url) as conn:
        conn.execute(
            sql.SQL("LOCK TABLE {}.messages IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(schema))
        )
        try:
            yield
        finally:
            conn.rollback()
