"""`open_run_store`: the run store of a backend, opened on entry and closed on exit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

from memory.runs.contract import RunDb
from memory.runs.postgres import PgRunDb
from memory.runs.sqlite import SERVE_DB_NAME, SqliteRunDb
from memory.runs.store import RunStore

__all__ = ["open_run_store"]


@asynccontextmanager
async def open_run_store(
    backend: Literal["files", "postgres"],
    *,
    home: Path,
    url: str | None = None,
    pg_schema: str = "keel",
    pool_size: int = 4,
    connect_timeout_s: float = 10.0,
) -> AsyncIterator[RunStore]:
    """`files`: `<home>/serve.db`; `postgres`: the run tables in `pg_schema` on `url`.

    Raises:
        ValueError: `postgres` without a URL.
        SessionStoreError: the store cannot be opened (the message says what to do).
    """
    db: RunDb
    if backend == "postgres":
        if not url:
            raise ValueError("the postgres run store needs storage.url")
        db = await PgRunDb.open(
            url, schema=pg_schema, pool_size=pool_size, connect_timeout_s=connect_timeout_s
        )
    else:
        db = await SqliteRunDb.open(home / SERVE_DB_NAME)
    store = RunStore(db)
    try:
        yield store
    finally:
        await store.aclose()
