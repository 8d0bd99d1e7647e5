"""The slot-6 skills index (memory/skills/_index.py)."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import pytest

from memory.skills import Skill, SkillLibrary, load_skills_index, render_skills_index
from prompts._text import load_text

HEADER = "## Skills\nLoad one with skill_view(name) before acting."


def skill(category: str, name: str, description: str = "Does it.") -> Skill:
    return Skill(name=name, category=category, description=description, directory=Path("/x") / name)


def skill_text(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# Body that must never reach the index\n"


def test_the_index_is_the_header_then_one_compact_line_per_skill() -> None:
    text = render_skills_index(
        [skill("ops", "deploy", "Ship it."), skill("general", "bisect", "Find it.")], HEADER
    )
    assert text == (
        "## Skills\nLoad one with skill_view(name) before acting.\n\n"
        "general: bisect — Find it.\n"
        "ops: deploy — Ship it."
    )


def test_an_empty_library_renders_nothing_so_the_slot_disappears() -> None:
    assert render_skills_index([], HEADER) == ""


def test_the_order_is_sorted_whatever_order_skills_arrive_in() -> None:
    skills = [skill("ops", "b"), skill("ops", "a"), skill("data", "z"), skill("general", "m")]
    renders = {render_skills_index(list(p), HEADER) for p in itertools.permutations(skills)}
    assert len(renders) == 1
    assert [line.split(" — ")[0] for line in renders.pop().splitlines()[3:]] == [
        "data: z",
        "general: m",
        "ops: a",
        "ops: b",
    ]


def test_multi_line_descriptions_are_folded_onto_one_line() -> None:
    text = render_skills_index([skill("ops", "x", "First line.\n  Second   line.")], HEADER)
    assert text.endswith("ops: x — First line. Second line.")


async def test_the_index_from_disk_is_byte_identical_regardless_of_creation_order(tmp_path: Path) -> None:
    specs = [("deploy", "ops"), ("bisect", None), ("etl", "data")]
    reference = SkillLibrary(tmp_path / "reference")
    for name, category in specs:
        reference.create(name, skill_text(name, f"About {name}."), category=category)
    expected = await load_skills_index(reference, HEADER)
    for number, order in enumerate(itertools.permutations(specs)):
        shuffled = SkillLibrary(tmp_path / f"shuffled{number}")
        for name, category in order:
            shuffled.create(name, skill_text(name, f"About {name}."), category=category)
        assert await load_skills_index(shuffled, HEADER) == expected
    assert expected.splitlines()[3:] == [
        "data: etl — About etl.",
        "general: bisect — About bisect.",
        "ops: deploy — About deploy.",
    ]
    assert "Body that must never reach the index" not in expected


async def test_invalid_skills_on_disk_are_left_out_of_the_index_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    lib.create("good", skill_text("good", "Fine."))
    broken = tmp_path / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="memory.skills"):
        assert (await load_skills_index(lib, HEADER)).splitlines()[3:] == ["general: good — Fine."]
    (record,) = caplog.records
    assert record.getMessage().startswith("skill broken left out of the index (invalid): ")
    assert "must start with a '---' line" in record.getMessage()


async def test_the_shipped_header_text_loads_and_renders(tmp_path: Path) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    lib.create("good", skill_text("good", "Fine."))
    text = await load_skills_index(lib, load_text("skills_index"))
    assert text.startswith("## Skills\n")
    assert "skill_view" in text
    assert text.endswith("\n\ngeneral: good — Fine.")
