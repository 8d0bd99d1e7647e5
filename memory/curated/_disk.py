"""Blocking file work for the curated store: read, lock, atomic replace, backup, archive.

Everything here blocks; the store calls it from worker threads only. Third-party and OS
errors are translated into `memory.errors` at this boundary.

The store files are untrusted: a store file must be a regular file, not a symbolic link (a
link would pull any file it points to into the prompt, and the first write would replace
the link), not a FIFO (opening one for reading blocks until a writer appears), not a
device (`/dev/zero` never ends), and at most `MAX_STORE_FILE_BYTES`. Anything else is
reported as unreadable, which makes the store refuse writes until it is fixed: a hostile
file type gets a clear error, never a hang, a leak or an overwrite. Files are opened
`O_NOFOLLOW | O_NONBLOCK` and checked again with `fstat`, so a swap between the check and
the open cannot sneak one in. A file whose owner-write bit is off is read-only on purpose
and is never replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from memory import _atomic
from memory._atomic import temp_prefix
from memory._files import O_SAFE_READ, file_kind
from memory.errors import StoreLockTimeout, StoreWriteError

__all__ = [
    "MAX_STORE_FILE_BYTES",
    "FileRead",
    "append_jsonl",
    "atomic_write",
    "backup_copy",
    "check_writable",
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


MAX_STORE_FILE_BYTES = 16 * 1024 * 1024
"""The largest store file read (the default budgets are a few kilobytes)."""


def _not_regular(path: Path, mode: int) -> str:
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return (
            f"it is a symbolic link (to {target[:200]!r}); keel reads only a regular file there, so a link "
            "cannot pull another file into the prompt. Replace the link with the file itself"
        )
    return f"it is {file_kind(mode)}, not a regular file; replace it with a text file"


def _read_regular(path: Path) -> bytes | str:
    """The file's bytes, or why it may not be read (never blocks, never follows a link)."""
    info = os.lstat(path)  # FileNotFoundError: the caller's "missing file"
    if not stat.S_ISREG(info.st_mode):
        return _not_regular(path, info.st_mode)
    fd = os.open(path, O_SAFE_READ)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between lstat and open
            return _not_regular(path, info.st_mode)
        if info.st_size > MAX_STORE_FILE_BYTES:
            return (
                f"it is {info.st_size:,} bytes; keel reads at most {MAX_STORE_FILE_BYTES:,}. Move it away "
                "and keep only short entries there"
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_STORE_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_STORE_FILE_BYTES:  # grew while we read
        return f"it is larger than {MAX_STORE_FILE_BYTES:,} bytes, the most keel reads"
    return data


def read_store_file(path: Path) -> FileRead:
    """Read a store file strictly as UTF-8; never raises, never blocks, for a missing or bad file."""
    try:
        raw = _read_regular(path)
    except FileNotFoundError:
        return FileRead(exists=False, text="", raw=None, error=None)
    except OSError as exc:
        return FileRead(exists=True, text="", raw=None, error=exc.strerror or type(exc).__name__)
    if isinstance(raw, str):
        return FileRead(exists=True, text="", raw=None, error=raw)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileRead(
            exists=True, text="", raw=raw, error=f"it is not valid UTF-8 (bad byte at offset {exc.start})"
        )
    return FileRead(exists=True, text=text.replace("\r\n", "\n").replace("\r", "\n"), raw=raw, error=None)


def check_writable(path: Path) -> None:
    """Refuse to replace a store file whose owner-write bit is off (read-only on purpose).

    `os.replace` needs only a writable directory, so without this check a `chmod a-w`
    MEMORY.md would be silently rewritten (and root ignores permission bits altogether).

    Raises:
        StoreWriteError: the file is read-only.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreWriteError(
            f"could not check {str(path)!r}: {exc.strerror or exc}; nothing was changed"
        ) from exc
    if not mode & stat.S_IWUSR:
        raise StoreWriteError(
            f"{path.name} is read-only (mode {stat.S_IMODE(mode):04o}); keel never replaces a file you "
            f"protected, so nothing was changed. To allow memory writes again: chmod u+w {str(path)!r}"
        )


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
    """Replace `path` with `data` durably (`memory._atomic.atomic_write`), owner-only (0600).

    Memory holds what the user told the agent about themselves; a file another local user
    can read (0644 under the usual umask) would leak it, so every write leaves it 0600.

    Raises:
        StoreWriteError: any step failed; the previous file is untouched and the temp file removed.
    """
    try:
        _atomic.atomic_write(path, data, mode=0o600)
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
        while candidate.exists() or candidate.is_symlink():
            # Only a regular file we can read safely can be "the same backup"; anything else
            # (a planted link or FIFO) is skipped, never read or written through.
            same = read_store_file(candidate)
            if same.error is None and same.raw == raw:
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
        # O_NOFOLLOW: a symlinked ARCHIVE.jsonl must not make us append to whatever it names.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
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
