"""Where the curated documents live: the `CuratedBackend` wall, and the files behind it.

`MemoryStore` owns every rule of the curated memory (the char budget, the scanner, the `§`
format, drift, eviction); a backend only reads a document and runs one write transaction
on it. Two backends sit behind this wall: the files of a keel home (`FileBackend`, here:
MEMORY.md / USER.md with a sidecar lock, ARCHIVE.jsonl) and PostgreSQL rows
(`memory.curated._pg.PgCuratedBackend`: a versioned row per document under a row lock,
ARCHIVE as an append-only table). Every method blocks; the store calls them from worker
threads only.

A transaction is a context manager: entering it takes the writer's lock and re-reads the
document (`DocTxn.read`); `archive` and `replace` stage the change; leaving the block
normally makes it durable, leaving it by an exception changes nothing (for files, the
archive append is already durable when `replace` fails — the file store's order since the
start: evicted entries are saved before they leave the file).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from memory.curated import _disk
from memory.curated._entries import FILE_NAMES, MemoryTarget

__all__ = [
    "ARCHIVE_NAME",
    "CuratedBackend",
    "DocRead",
    "DocTxn",
    "FileBackend",
    "text_hash",
]

ARCHIVE_NAME = "ARCHIVE.jsonl"


def text_hash(text: str) -> str:
    """The SHA-256 (hex) of a document's text: what a session row records of its snapshot."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class DocRead:
    """One read of a curated document.

    Attributes:
        exists: the document exists (even if it could not be read).
        text: decoded text (BOM stripped, CRLF folded); `""` when missing or unreadable.
        raw: the bytes as stored (`None` when they could not be read at all).
        error: why the document could not be read or decoded, else `None`.
        version: the row's version (PostgreSQL; 0 for a missing row); `None` for files,
            which keep no history.
    """

    exists: bool
    text: str
    raw: bytes | None
    error: str | None
    version: int | None = None


class DocTxn(Protocol):
    """One write transaction on one document, opened by `CuratedBackend.transaction`."""

    @property
    def read(self) -> DocRead:
        """The document as re-read under the writer's lock."""
        ...

    def check_writable(self) -> None:
        """Raise `StoreWriteError` when the document is protected from writes."""
        ...

    def backup(self, raw: bytes, unix_seconds: int) -> Path | None:
        """Keep a copy of `raw` before refusing a write (a file path, or None for a table row)."""
        ...

    def archive(self, records: Sequence[Mapping[str, str]]) -> None:
        """Append evicted entries to the archive."""
        ...

    def replace(self, text: str) -> None:
        """Replace the document's text (an empty store is `""`)."""
        ...


class CuratedBackend(Protocol):
    """Reads and writes the two documents of one `MemoryStore` (see the module docstring)."""

    def location(self, target: MemoryTarget) -> str:
        """Where `target` lives, safe to print (a path, or the schema and scope)."""
        ...

    def archive_location(self, target: MemoryTarget) -> str:
        """Where evictions from `target` go, safe to print."""
        ...

    def read(self, target: MemoryTarget) -> DocRead:
        """The current document; never raises for a missing or unreadable one."""
        ...

    def read_version(self, target: MemoryTarget, version: int) -> DocRead | None:
        """The document as it was at `version`, or None when that version is not kept."""
        ...

    def transaction(
        self, target: MemoryTarget, timeout_s: float
    ) -> contextlib.AbstractContextManager[DocTxn]:
        """Lock `target` for writing (waiting at most `timeout_s`) and re-read it."""
        ...


def _to_read(read: _disk.FileRead) -> DocRead:
    return DocRead(exists=read.exists, text=read.text, raw=read.raw, error=read.error)


@dataclass(slots=True)
class _FileTxn:
    path: Path
    archive_path: Path
    read: DocRead

    def check_writable(self) -> None:
        _disk.check_writable(self.path)

    def backup(self, raw: bytes, unix_seconds: int) -> Path | None:
        return _disk.backup_copy(self.path, raw, unix_seconds)

    def archive(self, records: Sequence[Mapping[str, str]]) -> None:
        _disk.append_jsonl(self.archive_path, [dict(r) for r in records])

    def replace(self, text: str) -> None:
        _disk.atomic_write(self.path, (text + "\n" if text else "").encode("utf-8"))


class FileBackend:
    """MEMORY.md in `directory`, USER.md in `user_directory` (default: the same), each with its
    sidecar lock and the ARCHIVE.jsonl beside it."""

    def __init__(self, directory: Path, *, user_directory: Path | None = None) -> None:
        self.directories: dict[MemoryTarget, Path] = {
            "memory": directory,
            "user": user_directory or directory,
        }

    def path(self, target: MemoryTarget) -> Path:
        """The file of `target`."""
        return self.directories[target] / FILE_NAMES[target]

    def archive_path(self, target: MemoryTarget) -> Path:
        """The ARCHIVE.jsonl beside `target`'s file."""
        return self.directories[target] / ARCHIVE_NAME

    def location(self, target: MemoryTarget) -> str:
        return str(self.path(target))

    def archive_location(self, target: MemoryTarget) -> str:
        return str(self.archive_path(target))

    def read(self, target: MemoryTarget) -> DocRead:
        return _to_read(_disk.read_store_file(self.path(target)))

    def read_version(self, target: MemoryTarget, version: int) -> DocRead | None:
        return None  # files keep no history; the caller compares hashes with the current file

    @contextlib.contextmanager
    def transaction(self, target: MemoryTarget, timeout_s: float) -> Iterator[DocTxn]:
        path = self.path(target)
        _disk.ensure_dir(self.directories[target])
        with _disk.locked(path, timeout_s):
            _disk.remove_stale_temps(path)
            yield _FileTxn(path, self.archive_path(target), _to_read(_disk.read_store_file(path)))
