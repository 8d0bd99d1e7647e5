"""The provider stores on each backend: SQLite files in a temp home, or rows in a fresh
PostgreSQL schema (migrated as every keel opener migrates it)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from memory.curated import open_curated_pool
from memory.providers import PgPlace
from memory.sessions.postgres import PgSessionStore


def migrated_place(url: str, schema: str) -> PgPlace:
    """Create and migrate `schema`, then a synchronous pool on it. Safe to call from a sync
    fixture of an async test: the migration runs on its own thread and event loop."""

    async def migrate() -> None:
        async with await PgSessionStore.open(url, schema=schema, pool_size=1):
            pass

    with ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, migrate).result()
    return PgPlace(open_curated_pool(url, schema, size=4, timeout_s=5), schema)


@pytest.fixture
def pg_place(postgres_url: str, sessions_schema: str) -> Iterator[PgPlace]:
    place = migrated_place(postgres_url, sessions_schema)
    try:
        yield place
    finally:
        place.pool.close()


@pytest.fixture(params=["sqlite", "postgres"])
def pg(request: pytest.FixtureRequest) -> PgPlace | None:
    """Where a provider keeps its data: None for its SQLite files, else a PostgreSQL schema."""
    if request.param == "sqlite":
        return None
    place: PgPlace = request.getfixturevalue("pg_place")
    return place
