"""A writer process racing on one PostgreSQL row (run as a script, not collected by pytest).

    pg_store_worker.py URL SCHEMA WORKER COUNT    add COUNT entries to MEMORY.md of scope `race`,
                                                  printing "acked N" after each committed add

COUNT 0 means forever (the parent SIGKILLs it). Entries are `store_worker.entry_text`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from memory import MemoryStore
from memory.curated import PgCuratedBackend, open_curated_pool
from tests.memory.curated.store_worker import BIG_LIMIT, entry_text


async def main(url: str, schema: str, worker: int, count: int) -> None:
    pool = await anyio.to_thread.run_sync(lambda: open_curated_pool(url, schema, size=1, timeout_s=10))
    backend = PgCuratedBackend(pool, schema=schema, memory_scope="race", user_scope="race")
    store = MemoryStore(
        Path("/nonexistent"), backend=backend, memory_char_limit=BIG_LIMIT, lock_timeout_s=120
    )
    n = 0
    while count == 0 or n < count:
        await store.add("memory", entry_text(worker, n))
        print(f"acked {n}", flush=True)
        n += 1
    await anyio.to_thread.run_sync(pool.close)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
