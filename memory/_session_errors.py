"""Errors raised by the episodic session store and `session_search`.

    SessionStoreError              root: anything the session store could not do
    ├── SessionStoreBusyError      another process held the write lock past every retry
    ├── SessionStoreCorruptError   the file is not a SQLite database, or it is damaged
    ├── SessionSchemaError         the database was written by a newer keel, or a migration failed
    ├── SessionNotFoundError       no session (or message) with that id
    ├── SessionConflictError       the session id already exists
    └── SessionQueryError          SQLite rejected a search query (a sanitizer bug; never expected)

`sqlite3` errors are translated into this tree at one boundary (`memory/_sqlite.py`) and
chained with `from`. The lead may later reparent `SessionStoreError` under the package root
in `memory/errors.py`; every other name stays.
"""

from __future__ import annotations

from memory.errors import MemoryLayerError

__all__ = [
    "SessionConflictError",
    "SessionNotFoundError",
    "SessionQueryError",
    "SessionSchemaError",
    "SessionStoreBusyError",
    "SessionStoreCorruptError",
    "SessionStoreError",
]


class SessionStoreError(MemoryLayerError):
    """Root of every error the session store raises on purpose."""


class SessionStoreBusyError(SessionStoreError):
    """The database stayed locked by another writer after the busy timeout and every retry."""


class SessionStoreCorruptError(SessionStoreError):
    """The state database is not a SQLite file or is damaged; move it aside to start fresh."""


class SessionSchemaError(SessionStoreError):
    """The schema is newer than this code understands, or a migration could not be applied."""


class SessionNotFoundError(SessionStoreError):
    """No session or message has the requested id."""


class SessionConflictError(SessionStoreError):
    """A session with that id already exists."""


class SessionQueryError(SessionStoreError):
    """SQLite refused a full-text query even after sanitizing."""
