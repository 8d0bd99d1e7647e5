"""Durable file operations for skill writes: atomic replace, snapshots, and restoring them.

Every write goes to a temp file in the target's directory, is fsynced, renamed over the
target with `os.replace`, and the directory is fsynced, so a reader sees the old bytes or
the new bytes, never a mix, and a crash leaves no half-written file in place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memory._atomic import atomic_write, fsync_dir

__all__ = ["FileSnapshot", "atomic_write", "fsync_dir", "remove_tree", "restore", "snapshot"]

@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """A file's bytes and permission bits before a write (`data is None`: it did not exist)."""

    path: Path
    data: bytes | None
    mode: int | None
    kind: Literal["file_snapshot"] = field(default="file_snapshot", init=False)


def snapshot(path: Path) -> FileSnapshot:
    """Record a file's exact bytes and mode so a blocked write can put them back."""
    try:
        return FileSnapshot(path=path, data=path.read_bytes(), mode=stat.S_IMODE(path.stat().st_mode))
    except FileNotFoundError:
        return FileSnapshot(path=path, data=None, mode=None)


def restore(snap: FileSnapshot) -> None:
    """Put a file back exactly as `snapshot` saw it (or remove it if it did not exist)."""
    if snap.data is None:
        with contextlib.suppress(FileNotFoundError):
            snap.path.unlink()
            fsync_dir(snap.path.parent)
        return
    atomic_write(snap.path, snap.data, mode=snap.mode)


def remove_tree(directory: Path, *, trash_parent: Path) -> None:
    """Remove a directory tree so readers never see it half-deleted.

    The tree is first renamed into a hidden `.trash-*` entry of `trash_parent` (same
    filesystem, one atomic rename), then deleted from there.
    """
    trash = trash_parent / f".trash-{uuid.uuid4().hex}"
    os.replace(directory, trash)
    fsync_dir(directory.parent)
    shutil.rmtree(trash, ignore_errors=True)
