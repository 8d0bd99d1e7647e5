"""The memory package's exception tree, organised by who has to act.

    MemoryLayerError                 root of every error the memory package raises on purpose
    └── StoreError                   the curated store (MEMORY.md / USER.md)
        ├── WriteRefused             the *model* (or CLI user) must change its request; nothing changed
        │   ├── InvalidWriteError        empty content/old_text, delimiter inside content, bad batch, ...
        │   ├── TargetDisabledError      the target store is switched off in config
        │   ├── ScanBlockedError         the write scanner found a threat; carries `findings`
        │   ├── NoMatchError             old_text matched no entry
        │   ├── AmbiguousMatchError      old_text matched several distinct entries; carries `previews`
        │   └── StoreFullError           the result would exceed the character budget
        └── StoreIOError             the *operator* (or a retry) must act; nothing changed
            ├── StoreReadError           the file exists but cannot be read or decoded
            ├── StoreWriteError          writing the file (or the archive) failed on disk
            ├── StoreLockTimeout         another writer held the sidecar lock too long
            └── DriftError               the file was edited by hand; a `.bak.<secs>` copy was made

    MemoryLayerError also roots the other memory areas' trees:
    ├── SessionStoreError            state.db (memory/_session_errors.py)
    ├── SkillError                   the skill library (memory/skills/_errors.py)
    └── HolographicError             the holographic provider (memory/holographic/_errors.py)

Every class carries a `reason` (a `RefusalReason` literal) so the memory tool and the CLI
can report a stable machine-readable cause next to the human message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    from memory.scanner import Finding

__all__ = [
    "AmbiguousMatchError",
    "DriftError",
    "InvalidWriteError",
    "MemoryLayerError",
    "NoMatchError",
    "RefusalReason",
    "ScanBlockedError",
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
]
"""Why a write did not land. The last two are produced by the memory tool itself."""


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
