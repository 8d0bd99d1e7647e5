"""Session-store fixtures: every backend behind one parametrized `store`, and both side by side."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import NamedTuple

import pytest

from memory import PgSessionStore, SessionDB, SessionStore


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    """A fresh, empty store of each backend (PostgreSQL: its own schema, dropped afterwards)."""
    opened: SessionStore
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        schema: str = request.getfixturevalue("pg_schema")
        opened = await PgSessionStore.open(url, schema=schema, pool_size=2)
    else:
        opened = await SessionDB.open(tmp_path / "state.db")
    async with opened:
        yield opened


class Pair(NamedTuple):
    sqlite: SessionDB
    pg: PgSessionStore


@pytest.fixture
async def both(tmp_path: Path, postgres_url: str, pg_schema: str) -> AsyncIterator[Pair]:
    """A SQLite store and a PostgreSQL store, to give the same writes and compare answers."""
    async with (
        await SessionDB.open(tmp_path / "state.db") as lite,
        await PgSessionStore.open(postgres_url, schema=pg_schema, pool_size=2) as pg,
    ):
        yield Pair(lite, pg)
