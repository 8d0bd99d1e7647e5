"""PostgreSQL helpers for the benchmarks: the server URL and a schema that is dropped afterwards."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

__all__ = ["postgres_url_default", "temporary_pg_schema"]


def postgres_url_default() -> str:
    """`$KEEL_TEST_POSTGRES_URL`, else the local trust-auth server's `test` database."""
    return os.environ.get("KEEL_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/test"


@contextmanager
def temporary_pg_schema(url: str, name: str) -> Iterator[str]:
    """Yield `name`; drop that schema (whatever the benchmark put in it) on the way out."""
    try:
        yield name
    finally:
        with psycopg.connect(url, autocommit=True, options="-c client_min_messages=warning") as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
