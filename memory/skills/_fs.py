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
from memory._files import O_SAFE_READ, file_kind

__all__ = [
    "FileSnapshot",
    "NotRegularFileError",
    "atomic_write",
    "fsync_dir",
    "read_regular",
    "remove_tree",
    "restore",
    "snapshot",
]


class NotRegularFileError(OSError):
    """The path is a symlink, FIFO, device, socket or directory: it is never read."""


def read_regular(path: Path, *, max_bytes: int) -> bytes:
    """Read at most `max_bytes` of a regular file without following a symlink or blocking.

    A FIFO opened for reading would block until a writer appears (and a worker thread
    stuck there ignores Ctrl-C), `/dev/zero` never ends, and a symlink can point at any
    file on the machine; so the path is checked with `lstat`, opened
    `O_NOFOLLOW | O_NONBLOCK`, and checked again with `fstat`.

    Raises:
        FileNotFoundError: nothing is there.
        NotRegularFileError: it is a symlink, FIFO, device, socket or directory (the
            message says which).
        OSError: it could not be read.
    """
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(f"{path.name} is {file_kind(mode)}, not a regular file")
    fd = os.open(path, O_SAFE_READ)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(f"{path.name} is {file_kind(mode)}, not a regular file")
        chunks: list[bytes] = []
        left = max_bytes
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """A file's bytes and permission bits before a write (`data is None`: it did not exist)."""

    path: Path
    data: bytes | None
    mode: int | None
    kind: Literal["file_snapshot"] = field(default="file_snapshot", init=False)


def snapshot(path: Path, *, max_bytes: int = 64 * 1024 * 1024) -> FileSnapshot:
    """Record a file's exact bytes and mode so a blocked write can put them back.

    Raises:
        NotRegularFileError: the path is a symlink, FIFO, device or directory (never read).
    """
    try:
        data = read_regular(path, max_bytes=max_bytes)
    except FileNotFoundError:
        return FileSnapshot(path=path, data=None, mode=None)
    return FileSnapshot(path=path, data=data, mode=stat.S_IMODE(os.lstat(path).st_mode))


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
