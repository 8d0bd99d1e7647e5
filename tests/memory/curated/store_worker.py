"""A writer process for the multi-process store tests (run as a script, not collected by pytest).

    store_worker.py adds DIR WORKER COUNT     add COUNT distinct entries, then exit
    store_worker.py churn DIR WORKER          add / replace / remove forever; print "ready" after
                                              the first committed write (the parent SIGKILLs it)

Every entry this worker writes is `entry_text(worker, n, version)`, so the parent can check
that whatever is on disk is a whole entry some writer intended.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import anyio

from memory import MemoryStore

BIG_LIMIT = 10_000_000


def entry_text(worker: int, n: int, version: int = 1) -> str:
    """A self-checking entry: a truncated or spliced copy would not equal this string."""
    digest = hashlib.sha256(f"{worker}:{n}:{version}".encode()).hexdigest()
    return f"w{worker} n{n} v{version} {digest} {digest[::-1]}"


async def adds(directory: Path, worker: int, count: int) -> None:
    store = MemoryStore(directory, memory_char_limit=BIG_LIMIT, lock_timeout_s=120)
    for n in range(count):
        await store.add("memory", entry_text(worker, n))


async def churn(directory: Path, worker: int) -> None:
    store = MemoryStore(directory, memory_char_limit=BIG_LIMIT, lock_timeout_s=120)
    n = 0
    while True:
        await store.add("memory", entry_text(worker, n))
        if n == 0:
            print("ready", flush=True)
        if n % 3 == 1:
            await store.replace("memory", entry_text(worker, n), entry_text(worker, n, 2))
        if n >= 4 and n % 2 == 0:
            await store.remove("memory", f"w{worker} n{n - 4} ")
        n += 1


def main(argv: list[str]) -> None:
    mode, directory, worker = argv[0], Path(argv[1]), int(argv[2])
    if mode == "adds":
        anyio.run(adds, directory, worker, int(argv[3]))
    elif mode == "churn":
        anyio.run(churn, directory, worker)
    else:
        raise SystemExit(f"unknown mode {mode!r}; use 'adds' or 'churn'")


if __name__ == "__main__":
    main(sys.argv[1:])
