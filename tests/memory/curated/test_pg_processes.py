"""Curated memory on PostgreSQL across real processes: racing writers on one row, killed
mid-write, lose no acknowledged write and leave only whole entries."""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio.to_thread
import psycopg
import pytest

from memory.curated._entries import parse_entries, round_trips
from tests.memory.curated.conftest import migrated_pool
from tests.memory.curated.store_worker import entry_text

REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("pg_store_worker.py")


def spawn(url: str, schema: str, worker: int, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), url, schema, str(worker), str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def document(url: str, schema: str) -> tuple[str, ...]:
    with psycopg.connect(url, options=f"-c search_path={schema}") as conn:
        row = conn.execute(
            "SELECT text FROM curated_docs WHERE scope = 'race' AND target = 'memory'"
        ).fetchone()
    text = "" if row is None else str(row[0])
    assert round_trips(text)
    entries = parse_entries(text)
    assert len(set(entries)) == len(entries), "an entry was duplicated"
    return entries


def acked(out: str, worker: int) -> set[str]:
    return {
        entry_text(worker, int(line.split()[1])) for line in out.splitlines() if line.startswith("acked ")
    }


async def prepare(url: str, schema: str) -> None:
    pool = await migrated_pool(url, schema)
    await anyio.to_thread.run_sync(pool.close)


def first_ack(proc: subprocess.Popen[str], timeout_s: float = 120.0) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout_s), "a worker committed nothing in time"
    return proc.stdout.readline()


def whole(entry: str) -> bool:
    worker, n = entry.split()[:2]
    return entry == entry_text(int(worker[1:]), int(n[1:]))


@pytest.mark.slow
def test_racing_processes_killed_mid_write_lose_no_acknowledged_write(
    postgres_url: str, sessions_schema: str
) -> None:
    anyio.run(prepare, postgres_url, sessions_schema)
    rng = random.Random(26)
    promised: set[str] = set()
    for r in range(4):
        procs = [spawn(postgres_url, sessions_schema, r * 3 + k, 0) for k in range(3)]
        firsts = [first_ack(p) for p in procs]
        time.sleep(rng.uniform(0, 0.5))  # then kill them mid-stream, wherever they are
        for p in procs:
            p.send_signal(signal.SIGKILL)
        for k, (p, first) in enumerate(zip(procs, firsts, strict=True)):
            out, _ = p.communicate(timeout=30)
            promised |= acked(first + out, r * 3 + k)
    entries = set(document(postgres_url, sessions_schema))
    assert len(promised) >= 12
    assert promised <= entries  # every acknowledged write survived the kills
    assert all(whole(e) for e in entries)  # and nothing torn landed


@pytest.mark.slow
async def test_two_processes_adding_to_one_row_lose_and_duplicate_nothing(
    postgres_url: str, sessions_schema: str
) -> None:
    await prepare(postgres_url, sessions_schema)
    procs = [spawn(postgres_url, sessions_schema, w, 25) for w in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    entries = document(postgres_url, sessions_schema)
    assert set(entries) == {entry_text(w, n) for w in range(2) for n in range(25)}
    for w in range(2):
        assert [e for e in entries if e.startswith(f"w{w} ")] == [entry_text(w, n) for n in range(25)]
