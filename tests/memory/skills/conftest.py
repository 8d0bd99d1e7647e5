"""Skill-library fixtures: the library under a fresh keel home, and a SKILL.md text maker."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.skills import SkillLibrary


def skill_text(
    name: str, description: str = "Does a useful thing.", body: str = "# Steps\n1. Do it.\n"
) -> str:
    """A SKILL.md: the front matter with `name` and `description`, then `body`."""
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


@pytest.fixture
def root(home: Path) -> Path:
    return home / "skills"


@pytest.fixture
def lib(root: Path) -> SkillLibrary:
    return SkillLibrary(root)
