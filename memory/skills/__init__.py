# Skills: procedural memory under <home>/skills/<category>/<name>/SKILL.md.
# _format (SKILL.md front matter, names, size caps) and _paths (no escape from a skill dir)
# are the rules; _library.SkillLibrary finds, validates, guards and loads skills, and
# _manage holds its locked, atomic, rolled-back writes (_fs: durable file operations).
# _rules + _guard are the security scan and the trust-tier policy; _index renders the
# slot-6 index; _schemas + _tools are the three tools the harness registers.
# _pg.PgSkillLibrary keeps the same library on PostgreSQL rows (a mirrored cache directory).
# Layering: memory never imports harness or prompts; prompt text is passed in.

import typing

from memory.errors import (
    SkillBlockedError,
    SkillConflictError,
    SkillError,
    SkillInputError,
    SkillNotFoundError,
    SkillStorageError,
)
from memory.lazy import lazy_names as _lazy_names
from memory.skills._format import (
    MAX_DESCRIPTION_CHARS,
    MAX_FILE_BYTES,
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    SUPPORT_DIRS,
    SkillDocument,
    check_name,
    parse_skill_md,
)
from memory.skills._guard import GuardFinding, GuardReport, Verdict, blocks, scan_skill, scan_text, verdict_of
from memory.skills._index import load_skills_index, render_skills_index, visible_shared
from memory.skills._library import SkillLibrary
from memory.skills._rules import GuardCategory, Severity
from memory.skills._schemas import (
    SKILL_TOOL_NAMES,
    ManageAction,
    SkillManageArgs,
    SkillsListArgs,
    SkillViewArgs,
    skill_manage_schema,
    skill_view_schema,
    skills_list_schema,
)
from memory.skills._tools import SkillManageTool, SkillsListTool, SkillViewTool
from memory.skills._types import (
    GENERAL,
    ChangeAction,
    ProblemKind,
    Skill,
    SkillCategory,
    SkillChange,
    SkillLocation,
    SkillProblem,
    SkillScan,
    SkillView,
    TrustTier,
)

# The PostgreSQL library loads psycopg when first read (`memory.lazy`).
if typing.TYPE_CHECKING:
    from memory.skills._pg import PgSkillLibrary

__getattr__ = _lazy_names(globals(), {"memory.skills._pg": ("PgSkillLibrary",)})

__all__ = [
    "GENERAL",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FILE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "SKILL_TOOL_NAMES",
    "SUPPORT_DIRS",
    "ChangeAction",
    "GuardCategory",
    "GuardFinding",
    "GuardReport",
    "ManageAction",
    "PgSkillLibrary",
    "ProblemKind",
    "Severity",
    "Skill",
    "SkillBlockedError",
    "SkillCategory",
    "SkillChange",
    "SkillConflictError",
    "SkillDocument",
    "SkillError",
    "SkillInputError",
    "SkillLibrary",
    "SkillLocation",
    "SkillManageArgs",
    "SkillManageTool",
    "SkillNotFoundError",
    "SkillProblem",
    "SkillScan",
    "SkillStorageError",
    "SkillView",
    "SkillViewArgs",
    "SkillViewTool",
    "SkillsListArgs",
    "SkillsListTool",
    "TrustTier",
    "Verdict",
    "blocks",
    "check_name",
    "load_skills_index",
    "parse_skill_md",
    "render_skills_index",
    "scan_skill",
    "scan_text",
    "skill_manage_schema",
    "skill_view_schema",
    "skills_list_schema",
    "verdict_of",
    "visible_shared",
]
