"""Every `keel` command finishes with a clear message on the hostile inputs of issue 16.

Each command runs in a real subprocess; the `timeout` is a hang guard (a hung command fails
the test), not a timed assertion.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HANG_GUARD_S = 60


def keel(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KEEL_")}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        env=environ,
        stdin=subprocess.DEVNULL,
    )


def _bomb(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{n}: &l{n} [" + ",".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, levels + 1)]
    return "\n".join(lines) + f"\nagent:\n  system_message: *l{levels}\n"


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    directory = tmp_path / "home" / "memories"
    directory.mkdir(parents=True)
    return directory


@pytest.mark.parametrize("command", [["config", "check"], ["memory", "list"], ["skills", "list"]])
def test_an_alias_bomb_config_fails_fast_with_a_short_error(tmp_path: Path, command: list[str]) -> None:
    config = tmp_path / "bomb.yaml"
    config.write_text(_bomb(), encoding="utf-8")
    done = keel(tmp_path / "home", "--config", str(config), *command)
    assert done.returncode == 2
    assert "aliases" in done.stderr
    assert len(done.stderr) < 1_000


def test_an_alias_bomb_in_an_environment_override_fails_fast(tmp_path: Path) -> None:
    bomb = (
        "["
        + ",".join(
            ["&a0 [x,x,x,x,x,x,x,x,x]"]
            + [f"&a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 9)]
        )
        + "]"
    )
    done = keel(tmp_path / "home", "memory", "list", env={"KEEL_PRICES": bomb})
    assert done.returncode == 2
    assert "KEEL_PRICES" in done.stderr
    assert len(done.stderr) < 1_000


@pytest.mark.parametrize("command", [["memory", "list"], ["memory", "show"]])
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_fifo_or_dev_zero_memory_file_is_reported_not_read(
    memories: Path, command: list[str], kind: str
) -> None:
    path = memories / "MEMORY.md"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    done = keel(memories.parent, *command)
    assert done.returncode == 0
    assert "MEMORY.md: could not be read" in done.stdout
    assert ("named pipe" if kind == "fifo" else "symbolic link") in done.stdout


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_adding_to_a_fifo_or_dev_zero_memory_file_is_refused_clearly(memories: Path, kind: str) -> None:
    path = memories / "MEMORY.md"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    done = keel(memories.parent, "memory", "add", "memory", "User likes tea.")
    assert done.returncode == 2
    assert "could not be read" in done.stderr
    assert "never overwritten" in done.stderr


def test_a_session_starts_and_ends_with_a_fifo_memory_file(memories: Path) -> None:
    os.mkfifo(memories / "MEMORY.md")
    done = keel(memories.parent, "run", "synthetic-200", "--turns", "1", "--use-home", "--scripted")
    assert "Traceback" not in done.stderr


def test_a_symlinked_memory_file_never_reaches_the_output_and_survives_a_write(memories: Path) -> None:
    secret = memories.parent.parent / "private.txt"
    secret.write_text("TOP-SECRET-LINE\n", encoding="utf-8")
    (memories / "USER.md").symlink_to(secret)
    shown = keel(memories.parent, "memory", "show")
    assert "TOP-SECRET-LINE" not in shown.stdout + shown.stderr
    added = keel(memories.parent, "memory", "add", "user", "User likes tea.")
    assert added.returncode == 2
    assert (memories / "USER.md").is_symlink()
    assert secret.read_text(encoding="utf-8") == "TOP-SECRET-LINE\n"


def test_a_read_only_memory_file_is_refused_with_the_fix(memories: Path) -> None:
    path = memories / "MEMORY.md"
    path.write_text("User likes tea.\n", encoding="utf-8")
    path.chmod(0o444)
    done = keel(memories.parent, "memory", "add", "memory", "User lives in Lyon.")
    assert done.returncode == 2
    assert "read-only" in done.stderr
    assert path.read_text(encoding="utf-8") == "User likes tea.\n"


def test_an_over_budget_memory_file_is_shown_within_budget_and_the_user_is_told(memories: Path) -> None:
    entries = [f"Fact {n} about the project." for n in range(100_000)]
    (memories / "MEMORY.md").write_text("\n§\n".join(entries) + "\n", encoding="utf-8")
    done = keel(memories.parent, "memory", "show", "memory")
    assert done.returncode == 0
    assert "over its budget" in done.stdout
    assert "not shown" in done.stdout
    assert len(done.stdout) < 5_000


def test_a_symlinked_skill_category_description_leaks_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    skill = home / "skills" / "ops" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploys.\n---\n# Steps\n", encoding="utf-8"
    )
    outside = tmp_path / "outside.txt"
    outside.write_text("LEAKED-FIRST-LINE\n", encoding="utf-8")
    (home / "skills" / "ops" / "DESCRIPTION.md").symlink_to(outside)
    done = keel(home, "skills", "list")
    assert done.returncode == 0
    assert "LEAKED-FIRST-LINE" not in done.stdout + done.stderr
