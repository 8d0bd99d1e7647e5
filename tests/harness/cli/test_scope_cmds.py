"""`--user` / `--workspace` on every `keel` command: each user sees only their own memory,
sessions and skills; a home laid out before scopes reads exactly as it did."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from harness.cli import main
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from memory import StoredMessage, open_session_db

REPO = Path(__file__).resolve().parents[3]
T0 = 1_700_000_000.0
SKILL = "---\nname: {name}\ndescription: {description}\n---\n# Steps\n1. do it\n"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Sessions on one backend, for the commands (environment) and for `config()` (keywords)."""
    if request.param == "sqlite":
        return {}
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("pg_schema")
    keys = {"sessions__backend": "postgres", "sessions__url": url, "sessions__pg_schema": schema}
    for key, value in keys.items():
        monkeypatch.setenv(f"KEEL_{key.upper()}", value)
    return keys


def keel(home: Path, *argv: str) -> int:
    return main(["--home", str(home), *argv])


def alice_chats(home: Path, backend: dict[str, str]) -> str:
    """A real session of alice's, with a word no one else uses."""

    async def chat() -> str:
        model = ScriptedModel([say("The quokka plan is on.")])
        async with open_session(
            config(**backend),
            SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), user_id="alice"),
        ) as s:
            await run_turn(s, "What about the quokka plan?")
            return s.session_id

    return anyio.run(chat)


def test_bob_sees_none_of_alices_memory_sessions_or_skills_from_the_command_line(
    home: Path, backend: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert keel(home, "--user", "alice", "memory", "add", "user", "Alice keeps bees") == 0
    assert keel(home, "--user", "alice", "memory", "add", "memory", "Repo uses quokka-build") == 0
    skill_dir = home / "users" / "alice" / "skills" / "hive-check"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(
        SKILL.format(name="hive-check", description="Check the hives"), encoding="utf-8"
    )
    sid = alice_chats(home, backend)
    capsys.readouterr()

    for argv in (("memory", "show"), ("memory", "list"), ("skills", "list"), ("sessions", "list")):
        assert keel(home, "--user", "bob", *argv) == 0
        out = capsys.readouterr().out
        for secret in ("bees", "quokka", "hive-check", sid):
            assert secret not in out, (argv, secret)
    assert keel(home, "--user", "bob", "sessions", "search", "quokka") == 0
    assert "No matching sessions found" in capsys.readouterr().out
    assert keel(home, "--user", "bob", "sessions", "show", sid) == 2
    assert keel(home, "--user", "bob", "sessions", "show", "no-such-id") == 2
    errors = capsys.readouterr().err
    assert f"no session {sid!r}" in errors and "no session 'no-such-id'" in errors
    assert keel(home, "--user", "bob", "skills", "show", "hive-check") == 2
    capsys.readouterr()
    # the default user (no --user) is someone else too
    assert keel(home, "sessions", "search", "quokka") == 0
    assert "No matching sessions found" in capsys.readouterr().out

    # alice sees all of it
    assert keel(home, "--user", "alice", "memory", "show") == 0
    out = capsys.readouterr().out
    assert "Alice keeps bees" in out and "Repo uses quokka-build" in out
    assert keel(home, "--user", "alice", "skills", "list") == 0
    assert "hive-check" in capsys.readouterr().out
    assert keel(home, "--user", "alice", "sessions", "search", "quokka") == 0
    assert sid in capsys.readouterr().out
    assert keel(home, "--user", "alice", "sessions", "show", sid) == 0
    assert "The quokka plan is on." in capsys.readouterr().out


def test_a_workspace_flag_shares_memory_and_skills_but_not_user_md(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        keel(home, "--user", "alice", "--workspace", "web", "memory", "add", "memory", "Web deploys via CI")
        == 0
    )
    assert (
        keel(home, "--user", "alice", "--workspace", "web", "memory", "add", "user", "Alice is on call") == 0
    )
    capsys.readouterr()
    assert keel(home, "--user", "bob", "--workspace", "web", "memory", "show") == 0
    out = capsys.readouterr().out
    assert "Web deploys via CI" in out and "Alice is on call" not in out
    assert keel(home, "--user", "bob", "--workspace", "web", "memory", "path") == 0
    out = capsys.readouterr().out
    assert str(home / "workspaces" / "web" / "memories" / "MEMORY.md") in out
    assert str(home / "users" / "bob" / "memories" / "USER.md") in out


def test_an_unsafe_user_flag_is_refused_with_the_rule_and_nothing_is_written(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert keel(home, "--user", "../evil", "memory", "add", "user", "x") == 2
    err = capsys.readouterr().err
    assert "not a safe directory name" in err and "letters, digits" in err
    assert list(home.iterdir()) == []


def test_the_user_flag_wins_over_the_old_memory_user_id_key(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "keel.yaml"
    cfg.write_text("memory:\n  user_id: ada\n", encoding="utf-8")
    assert (
        main(["--config", str(cfg), "--home", str(home), "--user", "cy", "memory", "add", "user", "Cy"]) == 0
    )
    assert (home / "users" / "cy" / "memories" / "USER.md").read_text(encoding="utf-8") == "Cy\n"
    assert not (home / "users" / "ada").exists()


# ---------------------------------------------------------------- migration


def _todays_home(home: Path) -> None:
    """A home as keel lays it out before scopes: curated files, a skill, sessions, a trace."""
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_text("Project uses tox\n§\nCI runs nightly\n", encoding="utf-8")
    (home / "memories" / "USER.md").write_text("Name is Dana\n", encoding="utf-8")
    (home / "skills" / "lint").mkdir(parents=True)
    (home / "skills" / "lint" / "SKILL.md").write_text(
        SKILL.format(name="lint", description="Run the linters"), encoding="utf-8"
    )
    (home / "traces").mkdir()
    (home / "traces" / "old.jsonl").write_text("{}\n", encoding="utf-8")

    async def sessions() -> None:
        async with open_session_db(home / "state.db") as db:
            await db.create_session("old-1", source="cli", started_at=T0)
            await db.append_messages(
                "old-1",
                [
                    StoredMessage(role="user", content="the gazebo budget is tight", timestamp=T0 + 1),
                    StoredMessage(role="assistant", content="Then wood, not stone.", timestamp=T0 + 2),
                ],
            )

    anyio.run(sessions)


def _files(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.name.startswith("state.db")
    }


def test_a_home_from_before_scopes_reads_the_same_and_nothing_moves(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _todays_home(home)
    before = _files(home)

    assert keel(home, "memory", "list") == 0
    out = capsys.readouterr().out
    assert "Project uses tox" in out and "CI runs nightly" in out and "Name is Dana" in out
    assert keel(home, "skills", "list") == 0
    assert "lint" in capsys.readouterr().out
    assert keel(home, "sessions", "search", "gazebo") == 0
    assert "old-1" in capsys.readouterr().out
    assert keel(home, "memory", "path") == 0
    assert f"MEMORY.md      {home / 'memories' / 'MEMORY.md'}" in capsys.readouterr().out

    async def chat() -> tuple[str, str]:
        model = ScriptedModel([call_tool("session_search", {"query": "gazebo"}), say("wood")])
        async with open_session(
            config(), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
        ) as s:
            events = await run_turn(s, "what did we decide about the gazebo?")
            return s.prompt.text, str([e for e in events if e.kind == "tool_result"])

    prompt, found = anyio.run(chat)
    for text in ("Project uses tox", "CI runs nightly", "Name is Dana", "lint — Run the linters"):
        assert text in prompt
    assert "gazebo budget" in found
    after = _files(home)
    # every file that was there is still there, byte for byte; new files are only new traces
    assert {k: after[k] for k in before} == before
    # New: only traces and the session leases (`<home>/leases/<id>.lock`, one per session run).
    assert all(k.startswith(("traces/", "leases/")) for k in set(after) - set(before))
    assert not (home / "users").exists() and not (home / "workspaces").exists()


def test_a_home_that_set_memory_user_id_keeps_its_files_for_that_user(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ada = home / "users" / "ada" / "memories"
    ada.mkdir(parents=True)
    (ada / "MEMORY.md").write_text("Ada's notes\n", encoding="utf-8")
    (ada / "USER.md").write_text("Ada prefers tabs\n", encoding="utf-8")
    cfg = tmp_path / "keel.yaml"
    cfg.write_text("memory:\n  user_id: ada\n", encoding="utf-8")
    for argv in (["memory", "show"], ["--user", "ada", "memory", "show"]):
        assert main(["--config", str(cfg), "--home", str(home), *argv]) == 0
        out = capsys.readouterr().out
        assert "Ada's notes" in out and "Ada prefers tabs" in out


def test_the_flags_work_on_a_real_keel_process(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "KEEL_HOME": str(home)}
    run = [sys.executable, "-m", "harness", "--user", "zoe", "memory", "add", "user", "Zoe rows"]
    subprocess.run(run, env=env, check=True, capture_output=True, timeout=60)
    shown = subprocess.run(
        [sys.executable, "-m", "harness", "--user", "yan", "memory", "show"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Zoe rows" not in shown.stdout
    assert (home / "users" / "zoe" / "memories" / "USER.md").read_text(encoding="utf-8") == "Zoe rows\n"


def test_config_check_names_the_principal(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert keel(home, "config", "check") == 0
    assert "for the default user" in capsys.readouterr().out
    assert keel(home, "--user", "ada", "--workspace", "web", "config", "check") == 0
    assert "for user 'ada', workspace 'web'" in capsys.readouterr().out
    assert keel(home, "--workspace", "a b", "config", "check") == 2
    assert "workspace 'a b' is not a safe directory name" in capsys.readouterr().err


def test_memory_show_and_skills_list_include_the_shared_workspace_read_only(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "keel.yaml"
    cfg.write_text("scope:\n  shared_workspace: team\n", encoding="utf-8")
    assert keel(home, "--workspace", "team", "memory", "add", "memory", "Standup is at nine") == 0
    skill_dir = home / "workspaces" / "team" / "skills" / "standup"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(
        SKILL.format(name="standup", description="Run the standup"), encoding="utf-8"
    )
    capsys.readouterr()
    base = ["--config", str(cfg), "--home", str(home), "--user", "bob"]
    assert main([*base, "memory", "show", "memory"]) == 0
    out = capsys.readouterr().out
    assert "SHARED MEMORY (workspace team, read-only)" in out and "Standup is at nine" in out
    assert main([*base, "skills", "list"]) == 0
    assert "standup (shared)" in capsys.readouterr().out
    assert main([*base, "skills", "show", "standup"]) == 0
    assert "Run the standup" in capsys.readouterr().out
    # without the config naming it, bob sees none of it
    assert keel(home, "--user", "bob", "memory", "show", "memory") == 0
    assert "Standup" not in capsys.readouterr().out


@pytest.mark.parametrize("spelling", ["null", "NULL", "Alice", "alicé"])
def test_a_user_id_that_is_null_non_ascii_or_another_users_in_other_case_is_refused(
    home: Path, spelling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert keel(home, "--user", "alice", "memory", "add", "user", "Alice keeps bees") == 0
    capsys.readouterr()
    assert keel(home, "--user", spelling, "memory", "list") == 2
    assert "error:" in capsys.readouterr().err
    assert sorted(p.name for p in (home / "users").iterdir()) == ["alice"]
