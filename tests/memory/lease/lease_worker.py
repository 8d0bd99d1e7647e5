"""A lease holder in its own process (run as a script, not collected by pytest).

    lease_worker.py hold  BACKEND TARGET SESSION           hold the lease, print "held", sleep until killed
    lease_worker.py turns BACKEND TARGET SESSION LOG N     N times: hold, append "start PID" and "end PID"
                                                           to LOG around a short sleep, release

BACKEND is `files` (TARGET: the lease directory) or `postgres` (TARGET: URL#SCHEMA).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from memory.lease import FileLease, PgLease, SessionLease


def lease_for(backend: str, target: str) -> SessionLease:
    if backend == "files":
        return FileLease(Path(target), wait_s=60)
    url, _, schema = target.partition("#")
    return PgLease(url, schema=schema, wait_s=60)


def _append(log: Path, line: str) -> None:
    with log.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


async def main(argv: list[str]) -> None:
    mode, backend, target, session = argv[:4]
    lease = lease_for(backend, target)
    if mode == "hold":
        async with lease.hold(session):
            print("held", flush=True)
            await anyio.sleep(3600)
        return
    log, count = Path(argv[4]), int(argv[5])
    for _ in range(count):
        async with lease.hold(session):
            await anyio.to_thread.run_sync(_append, log, f"start {os.getpid()}")
            await anyio.sleep(0.02)
            await anyio.to_thread.run_sync(_append, log, f"end {os.getpid()}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
