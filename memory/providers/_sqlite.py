"""One SQLite file of a provider store: opened and migrated once, one transaction per call.

The holographic store (`memory_store.db`) and the semantic store (`semantic.db`) keep one
file per user the same way: a connection from keel's one SQLite boundary (`memory._sqlite`)
behind a lock (the stores are called from worker threads), every call one transaction
(IMMEDIATE for a write), numbered migrations run on open (`memory._migrations`), and a
clear refusal once closed. Only their tables, their error type and their words differ
(`FileKind`); `ProviderFile` holds the rest.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memory._migrations import Migration, migrate_sqlite
from memory._sqlite import LockRetryPolicy, SqliteConnection, is_busy

__all__ = ["FileKind", "ProviderFile"]

_RETRY = LockRetryPolicy(busy_timeout_s=5.0)


@dataclass(frozen=True, slots=True)
class FileKind:
    """What a provider's file is: its name in messages (`fact store`), its error type, its
    migrations, what to do about a file a newer keel wrote, and (if anything) about a
    damaged one."""

    what: str
    error: Callable[[str], Exception]
    migrations: Sequence[Migration]
    too_new_fix: str
    damaged_fix: str = ""

    def translate(self, exc: sqlite3.Error, path: Path) -> Exception:
        """The store's error for an `sqlite3` one (the boundary, `memory._sqlite`, calls it)."""
        if is_busy(exc):
            return self.error(
                f"the {self.what} {str(path)!r} stayed locked by another writer ({exc}); retry, "
                "or stop the other keel process"
            )
        fix = f"; {self.damaged_fix}" if self.damaged_fix else ""
        return self.error(f"the {self.what} {str(path)!r} failed: {exc}{fix}")


class ProviderFile:
    """A provider store's open SQLite file. Use `ProviderFile.open`."""

    def __init__(self, conn: SqliteConnection, path: Path, kind: FileKind) -> None:
        self._conn: SqliteConnection | None = conn
        self._lock = threading.RLock()
        self.path = path
        self.kind = kind
        self.writes = 0
        """Write transactions committed through this object (a cache key for what they change)."""

    @classmethod
    def open(cls, path: Path, kind: FileKind) -> ProviderFile:
        """Open (creating or migrating) the file at `path`. Blocking: call it in a thread.

        Raises:
            Exception: `kind.error` when the file cannot be opened, is not this kind of
                store, or was written by a newer keel.
        """
        try:
            conn = SqliteConnection.connect(path, retry=_RETRY, translate=kind.translate)
        except OSError as exc:
            raise kind.error(f"cannot open the {kind.what} {str(path)!r}: {exc}; check the path") from exc
        file = cls(conn, path, kind)
        try:
            with file.transaction(write=True) as db:
                migrate_sqlite(db, kind.migrations, too_new=file._too_new)
        except BaseException:
            conn.close()
            raise
        return file

    @contextmanager
    def transaction(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection under the lock, in one transaction (IMMEDIATE for a write)."""
        with self._lock:
            if self._conn is None:
                raise self.kind.error(f"the {self.kind.what} {str(self.path)!r} is closed")
            with self._conn.transaction(write=write) as conn:
                yield conn
            if write:
                self.writes += 1

    def close(self) -> None:
        """Close the connection (calls already running finish first); a second close does nothing."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _too_new(self, found: int, known: int) -> Exception:
        return self.kind.error(
            f"the {self.kind.what} {str(self.path)!r} has schema version {found}, newer than this keel "
            f"understands ({known}); upgrade keel or {self.kind.too_new_fix}"
        )
