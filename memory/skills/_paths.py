"""Path rules for skill references and supporting files: no escape from the skill directory.

A supporting-file path is relative, POSIX-style, free of `.`/`..`/empty segments and
control characters, lives under one of references/ templates/ scripts/ assets/ (or is
`SKILL.md` where allowed), and — with every symlink followed — still resolves inside both
the skill directory and the skills root.
"""

from __future__ import annotations

from pathlib import Path

from memory.errors import SkillInputError
from memory.skills._format import SUPPORT_DIRS, check_name

__all__ = ["SKILL_FILE", "check_inside", "split_ref", "support_path"]

SKILL_FILE = "SKILL.md"
_MAX_PATH_CHARS = 512


def split_ref(ref: str) -> tuple[str | None, str]:
    """Split `name` or `category/name` into (category or None, name), both validated."""
    parts = ref.split("/")
    if len(parts) == 1:
        return None, check_name(parts[0])
    if len(parts) == 2:
        return check_name(parts[0], what="category"), check_name(parts[1])
    raise SkillInputError(f"skill reference {ref[:80]!r} is invalid; use 'name' or 'category/name'")


def support_path(skill_dir: Path, root: Path, file_path: str, *, allow_skill_md: bool) -> tuple[str, Path]:
    """Validate a supporting-file path and return (normalized relative path, absolute path).

    Raises:
        SkillInputError: the path is absolute, uses `..` or `.` segments, backslashes or
            control characters, is outside the allowed subdirectories, or — following
            symlinks — resolves outside the skill directory or the skills root.
    """
    shown = repr(file_path[:120])
    if not file_path:
        raise SkillInputError("file_path is empty; give a path like 'references/notes.md'")
    if len(file_path) > _MAX_PATH_CHARS:
        raise SkillInputError(f"file_path {shown} is longer than {_MAX_PATH_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in file_path):
        raise SkillInputError(f"file_path {shown} contains control characters or unpaired surrogates")
    if file_path.startswith(("/", "~")) or (len(file_path) > 1 and file_path[1] == ":"):
        raise SkillInputError(
            f"file_path {shown} is absolute; give a path relative to the skill directory, "
            "like 'references/notes.md'"
        )
    if "\\" in file_path:
        raise SkillInputError(f"file_path {shown} uses backslashes; use '/' between segments")
    segments = file_path.split("/")
    if any(seg in {"", ".", ".."} for seg in segments):
        raise SkillInputError(
            f"file_path {shown} contains '..', '.' or an empty segment; paths must stay inside the skill"
        )
    if any(seg.startswith(".") for seg in segments):
        raise SkillInputError(f"file_path {shown} names a hidden file or directory; drop the leading '.'")
    if file_path == SKILL_FILE and allow_skill_md:
        rel = SKILL_FILE
    elif len(segments) >= 2 and segments[0] in SUPPORT_DIRS:
        rel = file_path
    else:
        allowed = ", ".join(f"{d}/" for d in SUPPORT_DIRS)
        also = " (or SKILL.md)" if allow_skill_md else ""
        raise SkillInputError(f"file_path {shown} must be a file under {allowed}{also}")
    target = skill_dir / rel
    check_inside(target, skill_dir, what=f"file_path {shown}")
    check_inside(target, root, what=f"file_path {shown}")
    return rel, target


def check_inside(path: Path, base: Path, *, what: str) -> None:
    """Refuse `path` unless, with symlinks resolved, it lies inside (or is) `base`."""
    try:
        real = path.resolve(strict=False)
        real_base = base.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        raise SkillInputError(f"{what} cannot be resolved ({exc}); remove the broken symlink") from exc
    if not real.is_relative_to(real_base):
        raise SkillInputError(
            f"{what} resolves outside {base.name!r} (a symlink points elsewhere); "
            "only files inside the skill directory can be used"
        )
