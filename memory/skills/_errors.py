"""The skills exception tree, organised by who must act.

    SkillError                 root of every error the skills package raises on purpose
    ├── SkillInputError        the caller (usually the model): a bad name, path, size or SKILL.md
    ├── SkillNotFoundError     the caller: no skill or file by that name
    ├── SkillConflictError     the caller: the name is taken, or a bare name is ambiguous
    ├── SkillBlockedError      the caller: the security guard refused the content; carries the report
    └── SkillStorageError      the operator: the disk or the writer lock failed

The tool handlers turn every one of these into a JSON error the model can read; none of
them ever escapes into the turn loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.errors import MemoryLayerError

if TYPE_CHECKING:
    from memory.skills._guard import GuardReport

__all__ = [
    "SkillBlockedError",
    "SkillConflictError",
    "SkillError",
    "SkillInputError",
    "SkillNotFoundError",
    "SkillStorageError",
]


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
