"""The store across real OS processes: no lost or duplicated writes, and crash safety under SIGKILL."""

from __future__ import annotations

import os
import random
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory.curated._entries import parse_entries, round_trips
from tests.memory.curated.store_worker import entry_text

REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("store_worker.py")
_ENTRY = re.compile(r"^w(\d+) n(\d+) v(\d) [0-9a-f]{64} [0-9a-f]{64}$")


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_ready(proc: subprocess.Popen[str], timeout_s: float = 60.0) -> None:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            proc.kill()
            pytest.fail(f"worker did not start writing within {timeout_s} s")
    line = proc.stdout.readline()
    if line.strip() != "ready":
        stderr = proc.stderr.read() if proc.stderr else ""
        pytest.fail(f"worker failed before its first write: {line!r} {stderr}")


def _check_whole_entries(path: Path) -> tuple[str, ...]:
    text = path.read_text(encoding="utf-8")
    assert round_trips(text), "the file must always parse back exactly"
    entries = parse_entries(text)
    for entry in entries:
        match = _ENTRY.match(entry)
        assert match, f"not a whole entry: {entry[:100]!r}"
        worker, n, version = (int(g) for g in match.groups())
        assert entry == entry_text(worker, n, version), f"corrupted entry: {entry[:100]!r}"
    assert len(set(entries)) == len(entries), "an entry was duplicated"
    return entries


@pytest.mark.slow
def test_eight_processes_adding_fifty_entries_each_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    procs = [_spawn("adds", str(tmp_path), str(w), "50") for w in range(8)]
    for proc in procs:
        _, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, stderr
    entries = _check_whole_entries(tmp_path / "MEMORY.md")
    assert len(entries) == 400
    assert set(entries) == {entry_text(w, n) for w in range(8) for n in range(50)}
    # Each writer's own entries keep their order.
    for w in range(8):
        own = [e for e in entries if e.startswith(f"w{w} ")]
        assert own == [entry_text(w, n) for n in range(50)]


@pytest.mark.slow
def test_writers_killed_with_sigkill_at_random_moments_leave_only_whole_entries(tmp_path: Path) -> None:
    rng = random.Random(20260)
    path = tmp_path / "MEMORY.md"
    kills = 0
    torn = 0  # temp files left behind: evidence that a kill landed in the middle of a write
    rounds, per_round = 12, 3
    for r in range(rounds):
        procs = [_spawn("churn", str(tmp_path), str(r * per_round + k)) for k in range(per_round)]
        for proc in procs:
            _wait_ready(proc)
        for proc in procs:
            time.sleep(rng.uniform(0.0, 0.06))
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.communicate(timeout=30)
            assert proc.returncode == -signal.SIGKILL
            kills += 1
        torn += sum(1 for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
        entries = _check_whole_entries(path)
        assert entries, "each worker commits at least one entry before it is killed"
    assert kills >= 30
    print(f"\n{kills} SIGKILLs, {torn} of them during a write (temp file left behind)")
    # A killed writer may leave a temp file behind; the next writer removes it under the lock.
    done = _spawn("adds", str(tmp_path), "999", "1")
    _, stderr = done.communicate(timeout=60)
    assert done.returncode == 0, stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert entry_text(999, 0) in _check_whole_entries(path)
