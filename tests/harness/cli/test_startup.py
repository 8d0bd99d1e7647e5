"""A command that needs no model, server or meter starts without importing them.

`keel memory add` from eight terminals once took 20–28 s each: every command imported MCP,
the model clients, the meter and the experiments before parsing its arguments. Each command
here runs in a fresh interpreter (a real subprocess, as a user runs it) and reports which of
the heavy modules it loaded; none may be there. PostgreSQL's driver and numpy are on the list:
the memory package's façades hand out the PostgreSQL stores and the dense index on first use
(`memory.lazy`), so a command on the files and SQLite loads neither.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.cli._app import _selected
from harness.cli.commands import COMMANDS
from tests.subprocesses import run_python

HEAVY = (
    "mcp",
    "tiktoken",
    "llama_cpp",
    "starlette",
    "httpx",
    "jinja2",
    "opentelemetry",
    "harness.cachemeter",
    "harness.experiments",
    "harness.models.local",
    "harness.loop",
    "harness.tools",
    "harness.compress",
    "harness.telemetry",
    "memory.providers.semantic",
    "psycopg",
    "psycopg_pool",
    "numpy",
)

_SCRIPT = """
import json, sys
from harness.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --help exits from argparse
    code = exc.code
heavy = json.loads(sys.stdin.read())
loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")})
print(json.dumps({"code": code, "loaded": loaded}))
"""


def _run(argv: list[str], home: Path) -> dict[str, object]:
    done = run_python("-c", _SCRIPT, *argv, env={"KEEL_HOME": str(home)}, cwd=home, stdin=json.dumps(HEAVY))
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["out"] = done.stdout
    return result


STORE_COMMANDS = (
    "memory path",
    "memory list",
    "--help",
    "sessions list",
    "sessions search deploy",
    "skills list",
)


@pytest.mark.parametrize("command", [*STORE_COMMANDS, "config check"])
def test_a_store_command_imports_no_model_server_or_meter(command: str, tmp_path: Path) -> None:
    result = _run(command.split(), tmp_path)
    assert result["loaded"] == []
    assert result["code"] == 0


def test_the_probe_sees_a_heavy_module_when_a_command_loads_one(tmp_path: Path) -> None:
    # `keel cache lint` needs the meter: the same probe reports it, so an empty list above means something.
    result = _run(["cache", "lint", "--help"], tmp_path)
    assert "harness.cachemeter" in result["loaded"]  # type: ignore[operator]


def test_memory_path_still_prints_the_files(tmp_path: Path) -> None:
    result = _run(["memory", "path"], tmp_path)
    assert "MEMORY.md" in str(result["out"]) and str(tmp_path) in str(result["out"])


def _help_of_each_noun(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:  # argparse has no public accessor for subparsers
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: str(a.help) for a in action._choices_actions}
    return {}


def test_the_command_table_says_what_each_command_module_registers() -> None:
    # `keel --help` lists the nouns from the table without importing them; the table must
    # not drift from the help the modules give when they are imported.
    registered = _help_of_each_noun(build_parser())
    assert registered == {noun: help_text for noun, (_, help_text) in COMMANDS.items()}
    assert list(_help_of_each_noun(build_parser(["--help"]))) == list(registered)


@pytest.mark.parametrize(
    ("argv", "noun"),
    [
        (["memory", "path"], "memory"),
        (["--home", "memory", "sessions", "list"], "sessions"),
        (["--config", "x.yaml", "--user", "dana", "memory", "add"], "memory"),
        (["--help", "memory"], None),
        (["nonsense"], None),
        ([], None),
    ],
)
def test_the_noun_is_the_first_word_that_is_not_a_top_level_option(argv: list[str], noun: str | None) -> None:
    assert _selected(argv) == noun
