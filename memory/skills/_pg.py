"""`PgSkillLibrary`: a principal's skills as PostgreSQL rows, behind the same `SkillLibrary` code.

The rows (`skill_files (scope, path, content)`, migration 4 of the keel schema) are the truth;
a cache directory mirrors them so that every rule of the library — the layout, validation,
the security guard, trust tiers, the snapshot-and-rollback of a failed write — runs
unchanged on real files. Each operation runs in one transaction on one connection:

1. take the scope's transaction-level advisory lock (writers on every worker are ordered),
2. rewrite the cache from the rows (another worker's changes arrive here),
3. run the library's own method on the cache (the library calls `_held` around each of its
   methods; this class makes that the transaction),
4. for a change: replace the scope's rows with the cache's files, then commit.

A change the library refuses (guard, validation) raises before step 4, the transaction rolls
back and the library's own rollback restores the cache; a worker killed mid-change leaves the
rows as they were. Reads (`scan`, `view`, `locate`) take the same lock shared, so they see a
whole skill tree. Blocking, like `SkillLibrary`: call it from worker threads.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psycopg
import psycopg_pool
from psycopg.rows import TupleRow

from memory.errors import SkillStorageError
from memory.skills._library import SkillLibrary

__all__ = ["PgSkillLibrary"]

T = TypeVar("T")
Pool = psycopg_pool.ConnectionPool[psycopg.Connection[TupleRow]]


def _key(scope: str) -> int:
    digest = hashlib.sha256(f"keel-skills\0{scope}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _files(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if not root.is_dir():
        return out
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # the writer lock, trash
        for name in names:
            if name.startswith("."):
                continue
            path = Path(current) / name
            if path.is_file() and not path.is_symlink():
                out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


class PgSkillLibrary(SkillLibrary):
    """The skills of `scope` in a keel schema, mirrored in `cache` (see the module docstring).

    Args:
        cache: a directory this library alone rewrites (the rows are the truth).
        pool: a synchronous pool on the keel schema (`memory.curated.open_curated_pool`).
        scope: the principal's skills directory relative to a home, e.g. `workspaces/web/skills`.
        guard_agent_created, lock_timeout_s: as `SkillLibrary`.
    """

    def __init__(
        self,
        cache: Path,
        *,
        pool: Pool,
        scope: str,
        guard_agent_created: bool = True,
        lock_timeout_s: float = 10.0,
    ) -> None:
        super().__init__(cache, guard_agent_created=guard_agent_created, lock_timeout_s=lock_timeout_s)
        self._pool = pool
        self.scope = scope
        self._inside = threading.local()  # a library method calling another runs in the same transaction

    def _pull(self, conn: psycopg.Connection[TupleRow]) -> None:
        rows = conn.execute(
            "SELECT path, content FROM skill_files WHERE scope = %s", (self.scope,)
        ).fetchall()
        wanted = {str(p): bytes(c) for p, c in rows}
        if wanted == _files(self.root):
            return
        if self.root.exists():
            for child in self.root.iterdir():
                if child.name.startswith("."):
                    continue
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        for rel, content in wanted.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)

    def _push(self, conn: psycopg.Connection[TupleRow]) -> None:
        conn.execute("DELETE FROM skill_files WHERE scope = %s", (self.scope,))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO skill_files (scope, path, content) VALUES (%s, %s, %s)",
                [(self.scope, rel, content) for rel, content in sorted(_files(self.root).items())],
            )

    def _held(self, work: Callable[[], T], *, change: bool) -> T:
        # The library's calls nest (a write locates its skill first): the outermost one holds
        # the tree, the inner ones run inside it.
        if getattr(self._inside, "active", False):
            return work()
        self._inside.active = True
        try:
            return self._transaction(work, change=change)
        finally:
            self._inside.active = False

    def _transaction(self, work: Callable[[], T], *, change: bool) -> T:
        lock = "pg_advisory_xact_lock" if change else "pg_advisory_xact_lock_shared"
        try:
            with self._pool.connection() as conn:
                conn.execute(f"SELECT {lock}(%s)", (_key(self.scope),))
                self._pull(conn)
                result = work()
                if change:
                    self._push(conn)
                return result
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise SkillStorageError(
                f"the PostgreSQL server failed while using the skills of {self.scope!r} ({exc}); nothing was "
                "changed. Check that it is up (storage.url), then retry."
            ) from exc
