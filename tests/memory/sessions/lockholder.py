"""Another process holding `BEGIN EXCLUSIVE` on a real state.db (for tests of refused writes)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process

__all__ = ["exclusive_lock"]

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


@asynccontextmanager
async def exclusive_lock(path: Path) -> AsyncIterator[Process]:
    """Another process holding `BEGIN EXCLUSIVE` on `path` for the duration of the block."""
    holder = await anyio.open_process([sys.executable, "-c", HOLDER, str(path)])
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
