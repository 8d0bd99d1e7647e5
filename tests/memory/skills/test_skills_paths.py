"""Supporting-file paths never escape the skill directory (memory/skills/_paths.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.skills import SkillInputError
from memory.skills._paths import split_ref, support_path


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    d = tmp_path / "skills" / "ops" / "deploy"
    (d / "references").mkdir(parents=True)
    (d / "SKILL.md").write_text("x", encoding="utf-8")
    return d


def _check(skill_dir: Path, rel: str, *, allow_skill_md: bool = True) -> tuple[str, Path]:
    return support_path(skill_dir, skill_dir.parents[1], rel, allow_skill_md=allow_skill_md)


def test_a_path_under_an_allowed_directory_resolves_inside_the_skill(skill_dir: Path) -> None:
    assert _check(skill_dir, "references/api/notes.md") == (
        "references/api/notes.md",
        skill_dir / "references" / "api" / "notes.md",
    )


@pytest.mark.parametrize(
    ("rel", "fragment"),
    [
        ("../../../etc/passwd", "'..'"),
        ("references/../../secret", "'..'"),
        ("references/./x", "'..'"),
        ("references//x", "empty segment"),
        ("/etc/passwd", "absolute"),
        ("~/.ssh/id_rsa", "absolute"),
        ("C:/Windows/win.ini", "absolute"),
        ("references\\..\\x", "backslashes"),
        ("references/.hidden", "hidden"),
        ("notes.md", "must be a file under"),
        ("references", "must be a file under"),
        ("secrets/x.md", "must be a file under"),
        ("references/a\x00b", "control characters"),
        ("", "empty"),
    ],
)
def test_traversal_absolute_and_out_of_place_paths_are_refused(
    skill_dir: Path, rel: str, fragment: str
) -> None:
    with pytest.raises(SkillInputError, match=fragment):
        _check(skill_dir, rel)


def test_skill_md_is_only_allowed_where_asked(skill_dir: Path) -> None:
    assert _check(skill_dir, "SKILL.md")[0] == "SKILL.md"
    with pytest.raises(SkillInputError, match="must be a file under"):
        _check(skill_dir, "SKILL.md", allow_skill_md=False)


def test_a_file_symlink_that_points_outside_the_skill_is_refused(skill_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token", encoding="utf-8")
    os.symlink(secret, skill_dir / "references" / "leak.md")
    with pytest.raises(SkillInputError, match="resolves outside"):
        _check(skill_dir, "references/leak.md")


def test_a_directory_symlink_that_points_outside_the_skill_is_refused(
    skill_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, skill_dir / "templates")
    with pytest.raises(SkillInputError, match="resolves outside"):
        _check(skill_dir, "templates/new.md")


def test_a_symlink_to_a_sibling_skill_is_refused_even_though_it_stays_in_the_root(skill_dir: Path) -> None:
    sibling = skill_dir.parent / "other"
    (sibling / "references").mkdir(parents=True)
    (sibling / "references" / "x.md").write_text("x", encoding="utf-8")
    os.symlink(sibling / "references" / "x.md", skill_dir / "references" / "x.md")
    with pytest.raises(SkillInputError, match="resolves outside 'deploy'"):
        _check(skill_dir, "references/x.md")


def test_a_symlink_that_stays_inside_the_skill_is_allowed(skill_dir: Path) -> None:
    (skill_dir / "references" / "real.md").write_text("x", encoding="utf-8")
    os.symlink(skill_dir / "references" / "real.md", skill_dir / "references" / "alias.md")
    assert _check(skill_dir, "references/alias.md")[0] == "references/alias.md"


def test_skill_references_are_a_name_or_category_slash_name() -> None:
    assert split_ref("deploy") == (None, "deploy")
    assert split_ref("ops/deploy") == ("ops", "deploy")
    for bad in ("a/b/c", "../deploy", "/deploy", "ops/"):
        with pytest.raises(SkillInputError):
            split_ref(bad)
