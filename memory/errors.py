"""The memory package's exception tree, organised by who has to act — all of it, here.

    MemoryLayerError                 root of every error the memory package raises on purpose
    ├── StoreError                   the curated store (MEMORY.md / USER.md)
    │   ├── WriteRefused             the *model* (or CLI user) must change its request; nothing changed
    │   │   ├── InvalidWriteError        empty content/old_text, delimiter inside content, bad batch, ...
    │   │   ├── TargetDisabledError      the target store is switched off in config
    │   │   ├── ScanBlockedError         the write scanner found a threat; carries `findings`
    │   │   ├── NoMatchError             old_text matched no entry
    │   │   ├── AmbiguousMatchError      old_text matched several distinct entries; carries `previews`
    │   │   └── StoreFullError           the result would exceed the character budget
    │   └── StoreIOError             the *operator* (or a retry) must act; nothing changed
    │       ├── StoreReadError           the file exists but cannot be read or decoded
    │       ├── StoreWriteError          writing the file (or the archive) failed on disk
    │       ├── StoreLockTimeout         another writer held the sidecar lock too long
    │       ├── DriftError               the file was edited by hand; a `.bak.<secs>` copy was made
    │       └── SnapshotUnavailableError a resumed session's memory snapshot version is no longer kept
    ├── SessionStoreError            the episodic session store (state.db, or a PostgreSQL schema)
    │   ├── SessionStoreBusyError        another process held the write lock past every retry (operator/retry)
    │   ├── SessionBusyError             another worker holds the session's lease past the wait (retry)
    │   ├── SessionFencedError           this worker lost the session's lease; another took it (the turn stops writing)
    │   ├── SessionStoreUnavailableError the PostgreSQL server: bad URL, unreachable, login refused (operator)
    │   ├── SessionStoreCorruptError     the file is not a SQLite database, or it is damaged (operator)
    │   ├── SessionSchemaError           written by a newer keel, or a migration failed (operator)
    │   ├── SessionNotFoundError         no session (or message) with that id (caller)
    │   ├── SessionConflictError         the session id already exists (caller)
    │   └── SessionQueryError            the store rejected a search query (a sanitizer bug; never expected)
    ├── SkillError                   the skill library
    │   ├── SkillInputError              a bad name, path, size or SKILL.md (the caller, usually the model)
    │   ├── SkillNotFoundError           no skill or file by that name (caller)
    │   ├── SkillConflictError           the name is taken, or a bare name is ambiguous (caller)
    │   ├── SkillBlockedError            the security guard refused the content; carries the report (caller)
    │   └── SkillStorageError            the disk or the writer lock failed (operator)
    ├── HolographicError             the holographic provider
    │   ├── FactInputError               empty content, unknown fact id, a duplicate on update (caller)
    │   │   └── FactBlockedError             the write scanner refused the fact; carries `findings`
    │   └── FactStoreError               the fact database could not be opened or used (operator)
    ├── SemanticError                the semantic provider
    │   ├── SemanticInputError           empty or blocked content, an unknown memory id (caller)
    │   │   └── SemanticBlockedError         the write scanner refused the memory; carries `findings`
    │   ├── SemanticStoreError           the memory database could not be opened or used (operator)
    │   └── EmbedderError                the embedding model is missing, altered or failed (operator)
    └── ScopeError                   a user or workspace id is not a safe directory name (operator)

Every class carries a `reason` (a `RefusalReason` literal) so the memory tool and the CLI
can report a stable machine-readable cause next to the human message. Third-party errors
are translated into this tree at one boundary each (`sqlite3` in `memory/_sqlite.py`,
psycopg in `memory/sessions/postgres/_conn.py`,
the filesystem in `memory/curated/_disk.py` and `memory/_atomic.py`) and chained with `from`.
Tool handlers turn every one of these into a JSON error the model can read; none of them
escapes into the turn loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    from memory.scanner import Finding
    from memory.skills import GuardReport

__all__ = [
    "AmbiguousMatchError",
    "DriftError",
    "EmbedderError",
    "FactBlockedError",
    "FactInputError",
    "FactStoreError",
    "HolographicError",
    "InvalidWriteError",
    "MemoryLayerError",
    "NoMatchError",
    "RefusalReason",
    "ScanBlockedError",
    "ScopeError",
    "SemanticBlockedError",
    "SemanticError",
    "SemanticInputError",
    "SemanticStoreError",
    "SessionBusyError",
    "SessionConflictError",
    "SessionFencedError",
    "SessionNotFoundError",
    "SessionQueryError",
    "SessionSchemaError",
    "SessionStoreBusyError",
    "SessionStoreCorruptError",
    "SessionStoreError",
    "SessionStoreUnavailableError",
    "SkillBlockedError",
    "SkillConflictError",
    "SkillError",
    "SkillInputError",
    "SkillNotFoundError",
    "SkillStorageError",
    "SnapshotUnavailableError",
    "StoreError",
    "StoreFullError",
    "StoreIOError",
    "StoreLockTimeout",
    "StoreReadError",
    "StoreWriteError",
    "TargetDisabledError",
    "WriteRefused",
]

RefusalReason = Literal[
    "invalid",
    "disabled",
    "blocked",
    "no_match",
    "ambiguous",
    "full",
    "unreadable",
    "write_failed",
    "lock_timeout",
    "drift",
    "bad_arguments",
    "missing_old_text",
    "untrusted",
    "held",
]
"""Why a write did not land. The last four are produced by the memory tool itself: `untrusted`
and `held` when its content repeats untrusted text (see `memory.provenance`) and the policy
refuses it or holds it for the user's confirmation."""


class MemoryLayerError(Exception):
    """Root of every error the memory package raises on purpose."""

    reason: ClassVar[RefusalReason] = "invalid"


class StoreError(MemoryLayerError):
    """A curated-store operation did not happen; the store is unchanged."""


class WriteRefused(StoreError):
    """The request itself must change (the model can read the message and fix it)."""


class InvalidWriteError(WriteRefused):
    """Empty content or old_text, a delimiter line inside content, a malformed batch."""

    reason: ClassVar[RefusalReason] = "invalid"


class TargetDisabledError(WriteRefused):
    """The target store (`memory` or `user`) is disabled in the configuration."""

    reason: ClassVar[RefusalReason] = "disabled"


class ScanBlockedError(WriteRefused):
    """The write scanner flagged the content; `findings` says what it found."""

    reason: ClassVar[RefusalReason] = "blocked"

    def __init__(self, message: str, *, findings: Sequence[Finding]) -> None:
        super().__init__(message)
        self.findings: tuple[Finding, ...] = tuple(findings)


class NoMatchError(WriteRefused):
    """`old_text` is not part of any entry."""

    reason: ClassVar[RefusalReason] = "no_match"


class AmbiguousMatchError(WriteRefused):
    """`old_text` occurs in several distinct entries; `previews` shows their beginnings."""

    reason: ClassVar[RefusalReason] = "ambiguous"

    def __init__(self, message: str, *, previews: Sequence[str]) -> None:
        super().__init__(message)
        self.previews: tuple[str, ...] = tuple(previews)


class StoreFullError(WriteRefused):
    """The result would exceed the store's character budget."""

    reason: ClassVar[RefusalReason] = "full"


class StoreIOError(StoreError):
    """The files, not the request, are the problem; an operator or a retry must act."""


class StoreReadError(StoreIOError):
    """The store file exists but could not be read or decoded; writes are refused until it is fixed."""

    reason: ClassVar[RefusalReason] = "unreadable"


class StoreWriteError(StoreIOError):
    """Writing the store file or the archive failed; the previous file is intact."""

    reason: ClassVar[RefusalReason] = "write_failed"


class StoreLockTimeout(StoreIOError):
    """The sidecar lock `<file>.lock` was not acquired within the configured timeout."""

    reason: ClassVar[RefusalReason] = "lock_timeout"


class DriftError(StoreIOError):
    """The file on disk does not round-trip (edited by hand); `backup` is the copy that was made."""

    reason: ClassVar[RefusalReason] = "drift"

    def __init__(self, message: str, *, backup: Path | None) -> None:
        super().__init__(message)
        self.backup = backup


class SnapshotUnavailableError(StoreIOError):
    """A resumed session's recorded memory snapshot cannot be rebuilt (that version is gone)."""

    reason: ClassVar[RefusalReason] = "unreadable"


class SessionStoreError(MemoryLayerError):
    """Root of every error the session store raises on purpose."""


class SessionBusyError(SessionStoreError):
    """Another worker held the session's lease (a turn or a compression) past the bounded wait."""


class SessionFencedError(SessionStoreError):
    """A write carried the token of a session lease that another worker has taken since (the
    holder lost the lease with its connection): the store refused it, so two workers' turns
    never interleave in one session. Never journalled and never retried."""


class SessionStoreBusyError(SessionStoreError):
    """The database stayed locked by another writer after the busy timeout and every retry."""


class SessionStoreUnavailableError(SessionStoreError):
    """The PostgreSQL session store cannot be used: a bad URL, a server that does not answer,
    a refused login, a missing database. The message names the URL (password hidden) and the fix."""


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


class SkillError(MemoryLayerError):
    """Root of every error the skills package raises on purpose."""


class SkillInputError(SkillError):
    """A name, path, argument or SKILL.md text is invalid; the message names the fix."""


class SkillNotFoundError(SkillError):
    """No skill (or supporting file) matches the reference given."""


class SkillConflictError(SkillError):
    """The skill already exists, or a bare name matches skills in several categories."""


class SkillBlockedError(SkillError):
    """The guard blocked the content; nothing changed (a write was rolled back)."""

    def __init__(self, message: str, *, report: GuardReport) -> None:
        super().__init__(message)
        self.report = report


class SkillStorageError(SkillError):
    """The filesystem or the writer lock failed; the previous state was kept."""


class HolographicError(MemoryLayerError):
    """Root of the holographic provider's errors."""


class FactInputError(HolographicError):
    """A fact-store request that cannot be carried out as asked; nothing was changed."""


class FactStoreError(HolographicError):
    """The fact database failed; the message says which file and what to do."""


class ScopeError(MemoryLayerError, ValueError):
    """A user or workspace id cannot name a directory; nothing was read or written."""


class FactBlockedError(FactInputError):
    """The write scanner flagged the fact (content or tags); `findings` says what it found."""

    def __init__(self, message: str, *, findings: Sequence[Finding]) -> None:
        super().__init__(message)
        self.findings: tuple[Finding, ...] = tuple(findings)


class SemanticError(MemoryLayerError):
    """Root of the semantic provider's errors."""


class SemanticInputError(SemanticError):
    """A request to the semantic memory that cannot be carried out as asked; nothing changed."""


class SemanticBlockedError(SemanticInputError):
    """The write scanner flagged the memory; `findings` says what it found."""

    def __init__(self, message: str, *, findings: Sequence[Finding]) -> None:
        super().__init__(message)
        self.findings: tuple[Finding, ...] = tuple(findings)


class SemanticStoreError(SemanticError):
    """The semantic memory database failed; the message says which file and what to do."""


class EmbedderError(SemanticError):
    """The embedding model is not installed, its files do not match their pinned hashes, or it failed."""
