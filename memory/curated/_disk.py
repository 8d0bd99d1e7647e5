"""Blocking file work for the curated store: read, lock, atomic replace, backup, archive.

Everything here blocks; the store calls it from worker threads only. Third-party and OS
errors are translated into `memory.errors` at this boundary.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from memory import _atomic
from memory._atomic import temp_prefix
from memory.errors import StoreLockTimeout, StoreWriteError

__all__ = [
    "FileRead",
    "append_jsonl",
    "atomic_write",
    "backup_copy",
    "ensure_dir",
    "locked",
    "read_store_file",
    "remove_stale_temps",
]


@dataclass(frozen=True, slots=True)
class FileRead:
    """What reading a store file gave.

    Attributes:
        exists: the path exists (even if it could not be read).
        text: decoded text with the BOM stripped and CRLF folded; `""` when missing or unreadable.
        raw: the bytes as read (`None` when they could not be read at all).
        error: why the file could not be read or decoded, else `None`.
    """

    exists: bool
    text: str
    raw: bytes | None
    error: str | None


def read_store_file(path: Path) -> FileRead:
    """Read a store file strictly as UTF-8; never raises for a missing or bad file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return FileRead(exists=False, text="", raw=None, error=None)
    except OSError as exc:
        return FileRead(exists=True, text="", raw=None, error=exc.strerror or type(exc).__name__)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileRead(
            exists=True, text="", raw=raw, error=f"it is not valid UTF-8 (bad byte at offset {exc.start})"
        )
    return FileRead(exists=True, text=text.replace("\r\n", "\n"), raw=raw, error=None)


def ensure_dir(directory: Path) -> None:
    """Create the memories directory (and parents) if needed."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreWriteError(
            f"could not create the memories directory {str(directory)!r}: {exc.strerror or exc}; "
            "check that the keel home is writable"
        ) from exc


@contextlib.contextmanager
def locked(path: Path, timeout_s: float) -> Iterator[None]:
    """Hold the sidecar lock `<path>.lock` (an flock on POSIX) for the duration of the block.

    The data file itself is never locked, so it can be replaced atomically while readers
    (which take no lock) always see a whole file.
    """
    lock_path = path.with_name(path.name + ".lock")
    # A fresh lock object per transaction: flock locks belong to the open file description,
    # so two threads of one process exclude each other exactly like two processes do.
    # A short poll interval: filelock polls a non-blocking flock, and its default 50 ms sleep
    # would dominate the latency of a contended write that itself takes a few milliseconds.
    lock = FileLock(lock_path, timeout=timeout_s, mode=0o600, preserve_lock_file=True, poll_interval=0.005)
    try:
        lock.acquire()
    except Timeout as exc:
        raise StoreLockTimeout(
            f"another writer held {lock_path.name!r} for more than {timeout_s:g} s; nothing was changed. "
            "Retry in a moment (or raise memory.lock_timeout_s)."
        ) from exc
    except OSError as exc:
        raise StoreWriteError(
            f"could not create or lock {str(lock_path)!r}: {exc.strerror or exc}; nothing was changed. "
            "Check that the memories directory is writable."
        ) from exc
    try:
        yield
    finally:
        lock.release()


def remove_stale_temps(path: Path) -> None:
    """Delete temp files a killed writer left behind.

    Temp files for `path` only exist while a writer holds its lock, so any found by the
    current lock holder are debris from a crash.
    """
    prefix = temp_prefix(path)
    with contextlib.suppress(OSError):
        for leftover in path.parent.glob(f"{prefix}*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` durably (`memory._atomic.atomic_write`), keeping its mode.

    Raises:
        StoreWriteError: any step failed; the previous file is untouched and the temp file removed.
    """
    try:
        _atomic.atomic_write(path, data)
    except OSError as exc:
        raise StoreWriteError(
            f"could not write {path.name!r} in {str(path.parent)!r}: {exc.strerror or exc}; the previous "
            "file is intact. Check that the directory is writable and the disk is not full."
        ) from exc


def backup_copy(path: Path, raw: bytes, unix_seconds: int) -> Path:
    """Write `raw` to `<path>.bak.<unix_seconds>` (a numbered suffix if that name holds other bytes)."""
    candidate = path.with_name(f"{path.name}.bak.{unix_seconds}")
    n = 0
    try:
        while candidate.exists():
            if candidate.read_bytes() == raw:
                return candidate
            n += 1
            candidate = path.with_name(f"{path.name}.bak.{unix_seconds}.{n}")
    except OSError as exc:
        raise StoreWriteError(f"could not check {str(candidate)!r}: {exc.strerror or exc}") from exc
    atomic_write(candidate, raw)
    return candidate


def append_jsonl(path: Path, records: Sequence[dict[str, str]]) -> None:
    """Append one JSON object per line and fsync; one `write` call keeps concurrent appends whole.

    Raises:
        StoreWriteError: the append failed.
    """
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreWriteError(
            f"could not append to {str(path)!r}: {exc.strerror or exc}; nothing was changed or evicted."
        ) from exc
