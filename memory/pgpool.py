"""How keel opens a PostgreSQL connection pool: one recipe for every store that keeps one.

The session store (async), the run store behind `keel serve` (async) and the curated
documents with the skills and provider rows (synchronous) each keep a pool on one schema.
They are made alike here: the schema alone on the `search_path`, server notices off, a
bounded connect, a pool that starts with one connection and grows to `size`, named after
the store and the schema (psycopg's log records name it: `memory.pglog`), and a check at
checkout, so a connection the server dropped (a restart, a network cut) is replaced and
the first call after the server is back works. The caller opens the pool, and closes it
if opening fails (its own error type says what failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import psycopg
import psycopg_pool
from psycopg.rows import TupleRow

__all__ = ["PoolRecipe", "async_pool", "sync_pool"]


class _PoolArguments(TypedDict):
    kwargs: dict[str, object]
    min_size: int
    max_size: int
    timeout: float
    open: bool
    name: str


@dataclass(frozen=True, slots=True)
class PoolRecipe:
    """A pool of at most `size` connections to `url` for the `store` (`sessions`, `serve`,
    `curated`) on `schema`; `timeout_s` bounds connecting and waiting for a connection, and
    `lock_timeout_s` (when set) how long a statement waits for another client's lock."""

    url: str
    store: str
    schema: str
    size: int
    timeout_s: float
    lock_timeout_s: float | None = None

    def arguments(self) -> _PoolArguments:
        """What both pool classes take besides the URL and the check."""
        options = f'-c search_path="{self.schema}" -c client_min_messages=warning'
        if self.lock_timeout_s is not None:
            options += f" -c lock_timeout={max(1, round(self.lock_timeout_s * 1000))}"
        return _PoolArguments(
            kwargs={"options": options, "connect_timeout": max(1, round(self.timeout_s))},
            min_size=1,
            max_size=self.size,
            timeout=self.timeout_s,
            open=False,
            name=f"keel-{self.store}-{self.schema}",
        )


def async_pool(recipe: PoolRecipe) -> psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[TupleRow]]:
    """The pool `recipe` describes, not yet open (`await pool.open(wait=True, ...)`)."""
    check = psycopg_pool.AsyncConnectionPool.check_connection
    return psycopg_pool.AsyncConnectionPool(recipe.url, check=check, **recipe.arguments())


def sync_pool(recipe: PoolRecipe) -> psycopg_pool.ConnectionPool[psycopg.Connection[TupleRow]]:
    """The synchronous pool `recipe` describes, not yet open (blocking: use it from threads)."""
    check = psycopg_pool.ConnectionPool.check_connection
    return psycopg_pool.ConnectionPool(recipe.url, check=check, **recipe.arguments())
