"""Fact stores on both backends: `facts.open(key, ...)` is a SQLite file `<tmp>/<key>.db` or
the PostgreSQL scope of user `<key>`; the same key reopens the same facts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.providers import PgPlace
from memory.providers.holographic import FactBackend, FactStore, PgFactStore


class FactStores:
    """Opens fact stores on one backend and closes them all at teardown."""

    def __init__(self, tmp: Path, pg: PgPlace | None) -> None:
        self.tmp = tmp
        self.pg = pg
        self.opened: list[FactBackend] = []

    @property
    def kind(self) -> str:
        return "sqlite" if self.pg is None else "postgres"

    def open(self, key: str = "memory_store", **kwargs: object) -> FactBackend:
        if self.pg is None:
            store: FactBackend = FactStore.open(self.tmp / f"{key}.db", **kwargs)  # type: ignore[arg-type]  # test passthrough
        else:
            user = None if key == "memory_store" else key.replace("_", "-")
            store = PgFactStore.open(self.pg, user_id=user, **kwargs)  # type: ignore[arg-type]  # test passthrough
        self.opened.append(store)
        return store

    def close_all(self) -> None:
        for store in self.opened:
            store.close()


@pytest.fixture
def facts(tmp_path: Path, pg: PgPlace | None) -> Iterator[FactStores]:
    stores = FactStores(tmp_path, pg)
    try:
        yield stores
    finally:
        stores.close_all()
