"""`memory.retention.files`: traces, journals and ARCHIVE.jsonl on a real directory."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from memory.retention import FileRetention, file_stats, prune_archives, prune_journals, prune_trace_dirs

NOW = 1_800_000_000.0
DAY = 86_400.0


def make(path: Path, size: int, age_s: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (NOW - age_s, NOW - age_s))
    return path


def test_traces_go_by_age_and_by_each_directorys_budget_oldest_first_never_a_fresh_one(
    tmp_path: Path,
) -> None:
    ada, bo = tmp_path / "users" / "ada", tmp_path / "users" / "bo"
    old = make(ada / "old.jsonl", 100, 40 * DAY)
    mid = make(ada / "mid.jsonl", 100, 2 * DAY)
    new = make(ada / "new.jsonl", 100, 3 * DAY / 24)
    live = make(bo / "live.jsonl", 500, 60)  # written a minute ago, over budget alone
    rules = FileRetention(max_age_s=30 * DAY, max_bytes=150)
    dry = prune_trace_dirs([ada, bo], rules, dry_run=True, now=NOW)
    assert all(p.exists() for p in (old, mid, new, live))
    done = prune_trace_dirs([ada, bo], rules, dry_run=False, now=NOW)
    assert dry == done
    assert (done.count, done.bytes, done.kept_live) == (2, 200, 1)
    assert [p.exists() for p in (old, mid, new, live)] == [False, False, True, True]


def test_a_journal_goes_only_when_old_and_its_writer_is_gone(tmp_path: Path) -> None:
    gone = make(tmp_path / "a.jsonl", 10, 10 * DAY)
    held = make(tmp_path / "b.jsonl", 10, 10 * DAY)
    young = make(tmp_path / "c.jsonl", 10, DAY / 2)
    fd = os.open(held, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = prune_journals(tmp_path, max_age_s=7 * DAY, dry_run=False, now=NOW)
    finally:
        os.close(fd)
    assert (done.count, done.kept_live) == (1, 1)
    assert [p.exists() for p in (gone, held, young)] == [False, True, True]


def test_archive_entries_past_the_age_go_and_unreadable_lines_stay(tmp_path: Path) -> None:
    path = tmp_path / "memories" / "ARCHIVE.jsonl"
    path.parent.mkdir()
    lines = [
        json.dumps({"target": "memory", "content": "old", "evicted_at": "2020-01-01T00:00:00+00:00"}),
        "not json",
        json.dumps({"target": "memory", "content": "new", "evicted_at": "2026-12-01T00:00:00+00:00"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    assert prune_archives([path], max_age_s=365 * DAY, dry_run=True, now=NOW).count == 1
    assert path.read_text().count("\n") == 3
    done = prune_archives([path], max_age_s=365 * DAY, dry_run=False, now=NOW)
    assert done.count == 1
    assert path.read_text().splitlines() == lines[1:]


def test_file_stats_count_files_bytes_and_growth(tmp_path: Path) -> None:
    make(tmp_path / "a.jsonl", 10, 3 * DAY)
    make(tmp_path / "b.jsonl", 20, DAY / 2)
    make(tmp_path / "c.jsonl", 30, 30 * DAY)
    stats = file_stats("traces", [tmp_path, tmp_path / "missing"], now=NOW)
    assert stats is not None
    assert (stats.count, stats.bytes, stats.added_1d, stats.added_7d) == (3, 60, 1, 2)
