"""The README's command table and `keel --help` cannot drift apart."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from harness.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse has no public accessor for subparsers
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _readme_commands() -> dict[str, set[str]]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    found: dict[str, set[str]] = {}
    for cell in re.findall(r"^\| `keel ([^`]+)`", section, flags=re.MULTILINE):
        words = cell.split()
        noun = words[0]
        verbs = (
            set(words[1].replace("\\|", "|").split("|"))
            if len(words) > 1 and words[1][0].islower()
            else set()
        )
        found[noun] = {v for v in verbs if v.isidentifier() or "-" in v}
    return found


def test_every_command_in_help_is_in_the_readme_and_back() -> None:
    assert set(_readme_commands()) == set(_subcommands(build_parser()))


def test_the_readme_lists_each_commands_verbs() -> None:
    readme = _readme_commands()
    for noun, sub in _subcommands(build_parser()).items():
        verbs = set(_subcommands(sub))  # for `experiment`, its kinds
        if verbs:
            assert readme[noun] == verbs, (
                f"README lists {sorted(readme[noun])} for {noun}, help has {sorted(verbs)}"
            )


def test_the_readme_holds_the_two_commands_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[local]' && keel demo" in text
    test_cmd = "python -m pip install -e '.[dev,local]' && scripts/check"
    assert test_cmd in text
    assert test_cmd in ci
