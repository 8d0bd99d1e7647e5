"""The skill library against hostile file types: symlinked descriptions, FIFOs and devices.

Never a leak of a file outside the skills directory, never a hang (hang guards are pytest
timeouts, not timed assertions).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.skills import SkillInputError, SkillLibrary


def _skill(root: Path, rel: str) -> Path:
    directory = root / rel
    directory.mkdir(parents=True)
    name = directory.name
    (directory / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Does a useful thing.\n---\n# Steps\n", encoding="utf-8"
    )
    return directory


def test_a_symlinked_category_description_does_not_leak_the_file_it_points_to(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    _skill(root, "ops/deploy")
    outside = tmp_path / "secrets.txt"
    outside.write_text("db password hunter2-outside-the-skills-dir\n", encoding="utf-8")
    (root / "ops" / "DESCRIPTION.md").symlink_to(outside)
    scan = SkillLibrary(root).scan()
    (category,) = scan.categories
    assert category.description is None
    assert all("hunter2" not in (c.description or "") for c in scan.categories)


@pytest.mark.timeout(30)
def test_a_fifo_description_or_supporting_file_neither_blocks_the_index_nor_the_guard(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    directory = _skill(root, "ops/deploy")
    os.mkfifo(root / "ops" / "DESCRIPTION.md")
    (directory / "references").mkdir()
    os.mkfifo(directory / "references" / "pipe.md")
    scan = SkillLibrary(root).scan()  # agent-created by default: the guard reads every file
    assert [s.ref for s in scan.skills] == ["ops/deploy"]
    assert scan.categories[0].description is None


@pytest.mark.timeout(30)
def test_writing_over_a_fifo_supporting_file_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    directory = _skill(root, "ops/deploy")
    (directory / "references").mkdir()
    os.mkfifo(directory / "references" / "notes.md")
    with pytest.raises(SkillInputError, match="named pipe"):
        SkillLibrary(root).write_file("ops/deploy", "references/notes.md", "text\n")
