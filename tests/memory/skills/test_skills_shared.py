"""A shared (read-only) library beside the principal's own: listed, viewable, never changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.skills import (
    SkillLibrary,
    SkillManageTool,
    SkillsListTool,
    SkillViewTool,
    load_skills_index,
)
from tests.memory.skills.conftest import skill_text


def put(root: Path, name: str, description: str, category: str | None = None) -> Path:
    directory = root / category / name if category else root / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(skill_text(name, description), encoding="utf-8")
    return directory / "SKILL.md"


@pytest.fixture
def libs(tmp_path: Path) -> tuple[SkillLibrary, SkillLibrary]:
    own, shared = SkillLibrary(tmp_path / "own"), SkillLibrary(tmp_path / "team")
    put(own.root, "deploy", "My own deploy")
    put(shared.root, "deploy", "The team's deploy")  # hidden by mine
    put(shared.root, "release", "The team's release", category="ops")
    return own, shared


async def call(handler: Any, arguments: object) -> dict[str, Any]:  # parsed JSON: any shape
    parsed = json.loads(await handler(arguments))
    assert isinstance(parsed, dict)
    return parsed


async def test_the_list_marks_shared_skills_and_ones_own_skill_hides_the_shared_namesake(
    libs: tuple[SkillLibrary, SkillLibrary],
) -> None:
    own, shared = libs
    reply = await call(SkillsListTool(own, shared=shared), {})
    assert reply["count"] == 2
    assert reply["skills"] == [
        {"name": "deploy", "category": "general", "description": "My own deploy", "files": 0},
        {
            "name": "release",
            "category": "ops",
            "description": "The team's release",
            "files": 0,
            "shared": True,
        },
    ]
    assert {c["name"] for c in reply["categories"]} == {"general", "ops"}
    assert (await call(SkillsListTool(own), {}))["count"] == 1


async def test_view_falls_back_to_the_shared_library_and_says_so(
    libs: tuple[SkillLibrary, SkillLibrary],
) -> None:
    own, shared = libs
    view = SkillViewTool(own, shared=shared)
    mine = await call(view, {"name": "deploy"})
    assert "shared" not in mine and "My own deploy" in mine["content"]
    theirs = await call(view, {"name": "release"})
    assert theirs["shared"] is True and "read it" in theirs["note"]
    missing = await call(view, {"name": "nothing-here"})
    assert missing["success"] is False
    assert (await call(SkillViewTool(own), {"name": "release"}))["success"] is False


async def test_changing_a_shared_skill_is_refused_and_the_file_is_untouched(
    libs: tuple[SkillLibrary, SkillLibrary],
) -> None:
    own, shared = libs
    path = shared.root / "ops" / "release" / "SKILL.md"
    before = path.read_bytes()
    manage = SkillManageTool(own, shared=shared)
    for args in (
        {"action": "delete", "name": "release"},
        {"action": "patch", "name": "release", "old_string": "Do it", "new_string": "Skip it"},
        {"action": "write_file", "name": "release", "file_path": "references/x.md", "file_content": "x"},
    ):
        reply = await call(manage, args)
        assert reply["success"] is False
        assert "belongs to the shared workspace and is read-only" in reply["error"]
    assert path.read_bytes() == before
    missing = await call(manage, {"action": "delete", "name": "nothing-here"})
    assert "read-only" not in missing["error"]
    # creating one of one's own with that name is allowed, and it then takes precedence
    created = await call(
        manage, {"action": "create", "name": "release", "content": skill_text("release", "Mine now")}
    )
    assert created["success"] is True
    assert (await call(SkillViewTool(own, shared=shared), {"name": "release"}))["content"].count(
        "Mine now"
    ) == 1


async def test_the_prompt_index_lists_both_libraries_once(libs: tuple[SkillLibrary, SkillLibrary]) -> None:
    own, shared = libs
    index = await load_skills_index(own, "Skills:", shared=shared)
    assert index.splitlines()[2:] == ["general: deploy — My own deploy", "ops: release — The team's release"]
