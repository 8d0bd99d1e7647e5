"""The SKILL.md format and the naming rules: front matter, sizes, names, categories.

A SKILL.md is YAML front matter between two `---` lines (a leading BOM is tolerated) with
a string `name` equal to the skill's directory name and a non-empty `description` of at
most 1,024 characters, followed by a non-empty markdown body. Other front-matter keys
(version, author, ...) are kept but not interpreted.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Literal

import yaml

from memory.errors import SkillInputError

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_FILE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "SUPPORT_DIRS",
    "SkillDocument",
    "category_description",
    "check_name",
    "encode_text",
    "one_line",
    "parse_skill_md",
]

_log = logging.getLogger(__name__)

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1_024
MAX_TEXT_CHARS = 100_000
MAX_FILE_BYTES = 1_048_576
SUPPORT_DIRS: tuple[str, ...] = ("assets", "references", "scripts", "templates")

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
_FENCE = "---"


@dataclass(frozen=True, slots=True)
class SkillDocument:
    """A parsed, valid SKILL.md."""

    name: str
    description: str
    body: str
    kind: Literal["skill_document"] = field(default="skill_document", init=False)


def check_name(value: str, *, what: Literal["name", "category"] = "name") -> str:
    """Return `value` if it is a valid skill name or category (one directory segment).

    Raises:
        SkillInputError: it is empty, too long, or uses characters outside `[a-z0-9._-]`.
    """
    if not value:
        raise SkillInputError(f"skill {what} is empty; use lowercase letters, digits, '.', '_' or '-'")
    if len(value) > MAX_NAME_CHARS:
        raise SkillInputError(
            f"skill {what} {_short(value)} has {len(value)} characters; the limit is {MAX_NAME_CHARS}"
        )
    if not _NAME.fullmatch(value):
        raise SkillInputError(
            f"skill {what} {_short(value)} is invalid; it must match ^[a-z0-9][a-z0-9._-]*$ "
            "(lowercase, starting with a letter or digit, one path segment)"
        )
    return value


def encode_text(text: str, *, what: str) -> bytes:
    """Encode text for disk, refusing more than 100,000 characters or 1 MiB of UTF-8.

    Raises:
        SkillInputError: the text is too long or holds an unpaired surrogate (not encodable).
    """
    if len(text) > MAX_TEXT_CHARS:
        raise SkillInputError(
            f"{what} has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}. "
            "Move long material into a supporting file under references/"
        )
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SkillInputError(
            f"{what} contains a character that is not valid UTF-8 (position {exc.start}); remove it"
        ) from exc
    if len(data) > MAX_FILE_BYTES:
        raise SkillInputError(f"{what} is {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,} (1 MiB)")
    return data


def parse_skill_md(text: str, *, expected_name: str | None = None) -> SkillDocument:
    """Parse and validate SKILL.md text.

    Args:
        text: the whole file.
        expected_name: the skill's directory name; the front-matter `name` must equal it.

    Raises:
        SkillInputError: the text is too long, the front matter is missing, unclosed, not a
            YAML mapping, lacks a string `name`/`description`, the description is longer than
            1,024 characters, or the body is empty. The message names the fix.
    """
    encode_text(text, what="SKILL.md")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[0].rstrip("\r \t") != _FENCE:
        raise SkillInputError(
            "SKILL.md must start with a '---' line, then YAML front matter with name and "
            "description, then a closing '---' line, then the body"
        )
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r \t") == _FENCE), None)
    if close is None:
        raise SkillInputError("SKILL.md front matter is not closed; add a '---' line after it")
    try:
        meta: object = yaml.safe_load("\n".join(lines[1:close]))
    except Exception as exc:  # any parser failure on untrusted YAML means "invalid"
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SkillInputError(f"SKILL.md front matter is not valid YAML: {detail}") from exc
    if not isinstance(meta, dict):
        raise SkillInputError("SKILL.md front matter must be a YAML mapping with name and description")
    name = meta.get("name")
    description = meta.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillInputError("SKILL.md front matter needs a string 'name' (the skill's directory name)")
    name = name.strip()
    if expected_name is not None and name != expected_name:
        raise SkillInputError(
            f"SKILL.md front matter name {_short(name)} does not match the skill directory "
            f"{expected_name!r}; set 'name: {expected_name}'"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillInputError("SKILL.md front matter needs a non-empty string 'description'")
    description = description.strip()
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillInputError(
            f"SKILL.md description has {len(description):,} characters; the limit is "
            f"{MAX_DESCRIPTION_CHARS:,}. Shorten it to when and why to use the skill"
        )
    body = "\n".join(lines[close + 1 :])
    if not body.strip():
        raise SkillInputError("SKILL.md has an empty body; write the procedure after the front matter")
    return SkillDocument(name=name, description=description, body=body)


def category_description(text: str) -> str | None:
    """A category's `DESCRIPTION.md`: its front-matter `description`, else its first text line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[0].rstrip("\r \t") == _FENCE:
        close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r \t") == _FENCE), None)
        if close is not None:
            try:
                meta: object = yaml.safe_load("\n".join(lines[1:close]))
            except Exception as exc:  # a broken category file just has no description
                _log.warning(
                    "a skills DESCRIPTION.md has invalid YAML front matter (%s); its description is ignored",
                    exc,
                )
                meta = None
            if isinstance(meta, dict) and isinstance(meta.get("description"), str):
                return one_line(meta["description"])[:MAX_DESCRIPTION_CHARS] or None
            lines = lines[close + 1 :]
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return one_line(stripped)[:MAX_DESCRIPTION_CHARS]
    return None


def one_line(text: str) -> str:
    """Collapse all whitespace runs (newlines included) to single spaces."""
    return " ".join(text.split())


def _short(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:77] + "...")
