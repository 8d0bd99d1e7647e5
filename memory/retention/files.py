"""Prune and measure the home's files: traces, write journals, and evicted-entry archives.

- **Traces** (`<traces>/*.jsonl`, one directory per user): the oldest files of a directory
  go first, by age and by the directory's byte budget. A file written to within the last
  `LIVE_GRACE_S` is never removed: a running session may still append to it.
- **Journals** (`<home>/journal/*.jsonl`) hold session-store writes that were never
  stored; one goes only when it is older than the limit and no process holds its flock
  (its writer is gone), which is how `replay_journals` tells an abandoned file too.
- **Archives** (`ARCHIVE.jsonl` beside each MEMORY.md / USER.md): entries evicted before
  the cutoff are dropped and the file is replaced atomically; lines that cannot be read
  are kept, so nothing is lost to a parse error.

Blocking throughout: call from a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from memory._atomic import atomic_write
from memory.retention.policy import FileRetention, Pruned, StoreStats

__all__ = ["LIVE_GRACE_S", "file_stats", "prune_archives", "prune_journals", "prune_trace_dirs"]

LIVE_GRACE_S = 3_600.0
"""A trace file modified this recently may belong to a running session: never pruned."""

_DAY_S = 86_400.0


def _files(directory: Path) -> list[tuple[Path, os.stat_result]]:
    """The regular `*.jsonl` files directly in `directory` (symlinks are not followed)."""
    out = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for path in directory.iterdir():
            if path.suffix == ".jsonl" and not path.is_symlink() and path.is_file():
                out.append((path, path.stat()))
    return out


def prune_trace_dirs(
    dirs: Iterable[Path], rules: FileRetention, *, dry_run: bool, now: float | None = None
) -> Pruned:
    """Remove trace files by age and by each directory's byte budget (oldest first)."""
    now = time.time() if now is None else now
    count = freed = kept = 0
    for directory in dirs if rules.active else ():
        files = sorted(_files(directory), key=lambda item: item[1].st_mtime, reverse=True)
        total = 0
        for path, st in files:
            total += st.st_size
            too_old = rules.max_age_s is not None and st.st_mtime < now - rules.max_age_s
            too_big = rules.max_bytes is not None and total > rules.max_bytes
            if not (too_old or too_big):
                continue
            if st.st_mtime >= now - LIVE_GRACE_S:
                kept += 1
                continue
            total -= st.st_size
            count += 1
            freed += st.st_size
            if not dry_run:
                path.unlink(missing_ok=True)
    return Pruned("trace files", count, freed, kept_live=kept)


def _held(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return True  # cannot tell: keep it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the flock
    return False


def prune_journals(
    directory: Path, *, max_age_s: float | None, dry_run: bool, now: float | None = None
) -> Pruned:
    """Remove journal files older than `max_age_s` whose writer is gone (module doc)."""
    if max_age_s is None:
        return Pruned("journal files", 0, 0)
    now = time.time() if now is None else now
    count = freed = kept = 0
    for path, st in _files(directory):
        if st.st_mtime >= now - max_age_s:
            continue
        if _held(path):
            kept += 1
            continue
        count += 1
        freed += st.st_size
        if not dry_run:
            path.unlink(missing_ok=True)
    return Pruned("journal files", count, freed, kept_live=kept)


def _evicted_before(line: str, cutoff: float) -> bool:
    try:
        stamp = json.loads(line)["evicted_at"]
        return datetime.fromisoformat(str(stamp)).timestamp() < cutoff
    except (ValueError, KeyError, TypeError):
        return False  # unreadable: keep


def prune_archives(
    paths: Iterable[Path], *, max_age_s: float | None, dry_run: bool, now: float | None = None
) -> Pruned:
    """Drop archive entries evicted more than `max_age_s` ago from each `ARCHIVE.jsonl`."""
    if max_age_s is None:
        return Pruned("archived entries", 0, 0)
    now = time.time() if now is None else now
    count = freed = 0
    for path in paths:
        if path.is_symlink() or not path.is_file():
            continue
        raw = path.read_bytes()
        lines = raw.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
        kept = [line for line in lines if not _evicted_before(line, now - max_age_s)]
        if len(kept) == len(lines):
            continue
        data = "".join(kept).encode("utf-8", errors="surrogateescape")
        count += len(lines) - len(kept)
        freed += len(raw) - len(data)
        if not dry_run:
            atomic_write(path, data, mode=0o600)
    return Pruned("archived entries", count, freed)


def file_stats(what: str, dirs: Iterable[Path], *, now: float | None = None) -> StoreStats | None:
    """Files, bytes and growth (files modified in the last day / week) over `dirs`."""
    now = time.time() if now is None else now
    dirs = [d for d in dirs if d.is_dir()]
    if not dirs:
        return None
    files = [st for d in dirs for _, st in _files(d)]
    return StoreStats(
        what,
        ", ".join(str(d) for d in dirs[:3]) + (f" (+{len(dirs) - 3} more)" if len(dirs) > 3 else ""),
        len(files),
        sum(st.st_size for st in files),
        sum(1 for st in files if st.st_mtime >= now - _DAY_S),
        sum(1 for st in files if st.st_mtime >= now - 7 * _DAY_S),
    )
