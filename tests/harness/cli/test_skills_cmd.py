"""`keel skills list|show|path` (harness/cli/commands/skills.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from memory.skills import SkillLibrary

REPO = Path(__file__).resolve().parents[3]


def skill_text(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# Steps\n1. Do [bold]it[/bold].\n"


def keel(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEEL_")}
    env["PYTHONPATH"] = str(REPO)
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "harness", "--home", str(home), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def stocked(home: Path) -> Path:
    lib = SkillLibrary(home / "skills")
    lib.create("deploy", skill_text("deploy", "Ship the app to staging."), category="ops")
    lib.write_file("deploy", "references/hosts.md", "staging.example.com\n")
    lib.create("bisect", skill_text("bisect", "Find the commit that broke [the] build."))
    return home


def test_list_prints_a_table_of_category_name_description_and_files(stocked: Path) -> None:
    result = keel(stocked, "skills", "list")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "│" in line]
    assert [cell.strip() for cell in lines[0].split("│")[1:5]] == [
        "general",
        "bisect",
        "Find the commit that broke [the] build.",  # brackets shown, not eaten as markup
        "0",
    ]
    assert [cell.strip() for cell in lines[1].split("│")[1:5]] == [
        "ops",
        "deploy",
        "Ship the app to staging.",
        "1",
    ]


def test_show_prints_the_exact_skill_md_and_path_prints_the_directory(stocked: Path) -> None:
    shown = keel(stocked, "skills", "show", "ops/deploy")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == skill_text("deploy", "Ship the app to staging.")
    file = keel(stocked, "skills", "show", "deploy", "--file", "references/hosts.md")
    assert file.stdout == "staging.example.com\n"
    path = keel(stocked, "skills", "path")
    assert path.stdout.strip() == str(stocked / "skills")


def test_show_of_an_unknown_skill_exits_2_and_says_what_to_do(stocked: Path) -> None:
    result = keel(stocked, "skills", "show", "nope")
    assert result.returncode == 2
    assert "no skill named 'nope'" in result.stderr
    assert "keel skills list" in result.stderr


def test_show_refuses_a_path_that_leaves_the_skill(stocked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--home", str(stocked), "skills", "show", "deploy", "--file", "../../../etc/passwd"]) == 2
    assert "'..'" in capsys.readouterr().err


def test_a_missing_verb_is_a_usage_error(home: Path) -> None:
    result = keel(home, "skills")
    assert result.returncode == 2
    assert "VERB" in result.stderr


def test_list_of_an_empty_home_says_so_and_reports_broken_skills(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(home), "skills", "list"]) == 0
    assert "no skills yet" in capsys.readouterr().out
    broken = home / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("no front matter\n", encoding="utf-8")
    assert main(["--home", str(home), "skills", "list"]) == 0
    assert "skipped broken (invalid)" in capsys.readouterr().out
