"""Domain values of the skill library: skills, problems found on disk, categories, trust tiers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from memory.skills._guard import GuardReport

__all__ = [
    "GENERAL",
    "ChangeAction",
    "ProblemKind",
    "Skill",
    "SkillCategory",
    "SkillChange",
    "SkillLocation",
    "SkillProblem",
    "SkillScan",
    "SkillView",
    "TrustTier",
]

GENERAL = "general"
"""The category of a skill that sits directly under `skills/<name>/`."""

TrustTier: TypeAlias = Literal["builtin", "trusted", "community", "agent-created"]
"""Who vouches for a skill; decides which guard verdicts block it (see `guard.blocks`)."""

ProblemKind: TypeAlias = Literal["invalid", "duplicate", "blocked"]
ChangeAction: TypeAlias = Literal["create", "edit", "patch", "delete", "write_file", "remove_file"]


@dataclass(frozen=True, slots=True)
class Skill:
    """One valid skill on disk.

    Attributes:
        name: the directory name, equal to the front-matter `name`.
        category: the parent directory under the skills root, or `general`.
        description: the front-matter description (at most 1,024 characters).
        directory: the skill directory (absolute).
        files: supporting files, relative POSIX paths under the allowed subdirectories, sorted.
        trust: the trust tier the library assigned to it.
    """

    name: str
    category: str
    description: str
    directory: Path
    files: tuple[str, ...] = ()
    trust: TrustTier = "trusted"
    kind: Literal["skill"] = field(default="skill", init=False)

    @property
    def ref(self) -> str:
        """`category/name`: unambiguous even when two categories share a skill name."""
        return f"{self.category}/{self.name}"


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """A skill directory left out of the index, and why (a warning record, never a crash).

    Attributes:
        path: the directory, relative to the skills root (POSIX).
        problem: `invalid` (bad name or SKILL.md), `duplicate` (a second `general/<name>`),
            `blocked` (the guard refused it for its trust tier).
        reason: what is wrong and how to fix it.
    """

    path: str
    problem: ProblemKind
    reason: str
    kind: Literal["skill_problem"] = field(default="skill_problem", init=False)


@dataclass(frozen=True, slots=True)
class SkillCategory:
    """A category and its optional `DESCRIPTION.md` text."""

    name: str
    description: str | None
    count: int
    kind: Literal["skill_category"] = field(default="skill_category", init=False)


@dataclass(frozen=True, slots=True)
class SkillScan:
    """What one pass over the skills root found, sorted by (category, name) / path."""

    skills: tuple[Skill, ...]
    problems: tuple[SkillProblem, ...]
    categories: tuple[SkillCategory, ...]
    kind: Literal["skill_scan"] = field(default="skill_scan", init=False)


@dataclass(frozen=True, slots=True)
class SkillLocation:
    """Where a skill directory is, whether or not its SKILL.md is valid."""

    category: str
    name: str
    directory: Path
    kind: Literal["skill_location"] = field(default="skill_location", init=False)

    @property
    def ref(self) -> str:
        return f"{self.category}/{self.name}"


@dataclass(frozen=True, slots=True)
class SkillView:
    """A loaded skill file: SKILL.md or one supporting file."""

    skill: Skill
    file: str
    content: str
    kind: Literal["skill_view"] = field(default="skill_view", init=False)


@dataclass(frozen=True, slots=True)
class SkillChange:
    """The outcome of one successful write.

    Attributes:
        action: what was done.
        ref: the skill, as `category/name`.
        path: the file or directory changed, relative to the skills root (POSIX).
        replacements: for `patch`, how many occurrences were replaced.
        report: the guard's report when the write was scanned (None when scanning is off
            or the action cannot add content: delete, remove_file).
    """

    action: ChangeAction
    ref: str
    path: str
    replacements: int | None = None
    report: GuardReport | None = None
    kind: Literal["skill_change"] = field(default="skill_change", init=False)
