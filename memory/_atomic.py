"""The one durable-write routine: a reader sees the old bytes or the new, never a mix.

Every durable write in keel (MEMORY.md / USER.md, their backups, SKILL.md files, the
cache meter's reports) goes through `atomic_write`: a temp file in the target's directory,
written and fsynced, renamed over the target with `os.replace`, then the directory fsynced
so the rename itself survives a crash. On any failure the temp file is removed and the
target is untouched; the `OSError` propagates for the caller to translate into its own
error (with the fix named).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "fsync_dir", "temp_prefix"]

_NEW_FILE_MODE = 0o644


def temp_prefix(path: Path) -> str:
    """The prefix of `path`'s temp files (so a lock holder can sweep a crashed writer's debris)."""
    return f".{path.name}."


def fsync_dir(path: Path) -> None:
    """Flush a directory entry change (a rename, a new or removed file) to disk."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically (temp file + fsync + os.replace + dir fsync).

    Args:
        path: the target; its directory must exist.
        data: the new bytes.
        mode: permission bits for the result; default: keep the current file's, else 0o644.

    Raises:
        OSError: any step failed; the previous file is intact and the temp file removed.
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = _NEW_FILE_MODE
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=temp_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)
