"""The curated store on each backend: files in a temp home, or rows in a fresh PostgreSQL schema."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread
import pytest

from memory import MemoryStore, MemoryTarget
from memory.curated import CuratedPool, FileBackend, PgCuratedBackend, open_curated_pool
from memory.sessions.postgres import PgSessionStore

Backend = Literal["files", "postgres"]


async def migrated_pool(url: str, schema: str) -> CuratedPool:
    """Create and migrate `schema` (as every keel opener does), then a curated pool on it."""
    async with await PgSessionStore.open(url, schema=schema, pool_size=1):
        pass
    return await anyio.to_thread.run_sync(lambda: open_curated_pool(url, schema, size=4, timeout_s=5))


@dataclass
class Curated:
    """Builds stores on one backend and reaches under them (seed a document, read it raw)."""

    kind: Backend
    home: Path
    pool: CuratedPool | None
    schema: str

    def backend(
        self, *, memory_scope: str = "memories", user_scope: str = "memories"
    ) -> FileBackend | PgCuratedBackend:
        if self.pool is None:
            return FileBackend(self.home / memory_scope, user_directory=self.home / user_scope)
        return PgCuratedBackend(
            self.pool, schema=self.schema, memory_scope=memory_scope, user_scope=user_scope
        )

    def store(self, **kwargs: Any) -> MemoryStore:
        scopes = {k: kwargs.pop(k) for k in ("memory_scope", "user_scope") if k in kwargs}
        return MemoryStore(self.home / "memories", backend=self.backend(**scopes), **kwargs)

    def seed(self, target: MemoryTarget, text: str, *, scope: str = "memories") -> None:
        """Put `text` in the document as a hand edit would (bypassing the store)."""
        name = {"memory": "MEMORY.md", "user": "USER.md"}[target]
        if self.pool is None:
            (self.home / scope).mkdir(parents=True, exist_ok=True)
            (self.home / scope / name).write_text(text, encoding="utf-8")
            return
        with self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO curated_docs (scope, target, version, text, updated_at) VALUES (%s, %s, 1, %s, 0) "
                "ON CONFLICT (scope, target) DO UPDATE SET text = excluded.text, version = curated_docs.version + 1",
                (scope, target, text),
            )

    def raw(self, target: MemoryTarget, *, scope: str = "memories") -> str:
        """The document's text as stored (files: without the final newline)."""
        name = {"memory": "MEMORY.md", "user": "USER.md"}[target]
        if self.pool is None:
            path = self.home / scope / name
            return path.read_text(encoding="utf-8").removesuffix("\n") if path.exists() else ""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT text FROM curated_docs WHERE scope = %s AND target = %s", (scope, target)
            ).fetchone()
        return "" if row is None else str(row[0])

    def archived(self, *, scope: str = "memories") -> list[str]:
        """The archived entries' contents, oldest first."""
        if self.pool is None:
            path = self.home / scope / "ARCHIVE.jsonl"
            lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
            return [json.loads(line)["content"] for line in lines]
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT content FROM curated_archive WHERE scope = %s ORDER BY id", (scope,)
            ).fetchall()
        return [str(r[0]) for r in rows]


@pytest.fixture(params=["files", "postgres"])
async def curated(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Curated]:
    if request.param == "files":
        yield Curated("files", tmp_path, None, "")
        return
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("sessions_schema")
    pool = await migrated_pool(url, schema)
    try:
        yield Curated("postgres", tmp_path, pool, schema)
    finally:
        await anyio.to_thread.run_sync(pool.close)
