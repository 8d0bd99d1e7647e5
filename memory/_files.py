"""Reading a file a user may have replaced with anything: the open flags, and what it is instead.

A FIFO opened for reading blocks until a writer appears, `/dev/zero` never ends, and a
symbolic link can point at any file on the machine. The readers of store and skill files
check the path with `lstat`, open it with `O_SAFE_READ` (no link followed, never blocking)
and check again with `fstat`; `file_kind` names what they found where a regular file
should be.
"""

from __future__ import annotations

import os
import stat

__all__ = ["O_SAFE_READ", "file_kind"]

O_SAFE_READ = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)
"""`os.open` flags for a read that follows no link and never waits for a writer."""


def file_kind(mode: int) -> str:
    """What a file of `mode` (`st_mode`) is, for an error: "a named pipe (FIFO)", …"""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
