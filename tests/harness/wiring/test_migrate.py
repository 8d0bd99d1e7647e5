"""`migrate_home` / `keel storage migrate --to postgres`: a home copied into PostgreSQL, verified,
the source untouched, a rerun a no-op, and a worker with an empty home carries on from it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import pytest

from harness.cli import main
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from harness.wiring.migrate import migrate_home


def tree_digest(home: Path) -> dict[str, str]:
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


async def make_home(home: Path) -> str:
    """A files-backend home: two users' memory (one with an archive) and their sessions."""
    for user in ("ada", "bob"):
        cfg = config(scope__user=user, memory__overflow="evict_oldest", memory__user_char_limit="40")
        steps = [
            call_tool(
                "memory", {"action": "add", "target": "user", "content": f"{user} likes the colour teal"}
            ),
            call_tool(
                "memory", {"action": "add", "target": "user", "content": f"{user} lives in a lighthouse"}
            ),
            say("noted"),
        ]
        async with open_session(
            cfg, SessionOptions(model=ScriptedModel(steps), home=home, tokenizer=FakeTokenizer())
        ) as s:
            await run_turn(s, "Teal. Lighthouse.")
            last = s.session_id
    return last


async def test_a_home_migrates_verified_untouched_and_a_rerun_is_a_no_op(
    tmp_path: Path, postgres_url: str, sessions_schema: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bob_session = await make_home(home)
    skill = home / "users" / "ada" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Ship it\n---\n1. make deploy\n", encoding="utf-8")
    before = tree_digest(home)
    first = await migrate_home(home, postgres_url, schema=sessions_schema)
    assert first.verified and not first.conflicts
    assert "users/ada/memories/USER.md" in first.copied and "users/bob/memories/ARCHIVE.jsonl" in first.copied
    assert f"session {bob_session}" in first.copied and "users/ada/skills/ (1 files)" in first.copied
    assert tree_digest(home) == before  # the source was not written
    again = await migrate_home(home, postgres_url, schema=sessions_schema)
    assert again.copied == [] and sorted(again.skipped) == sorted(first.copied) and again.verified
    with psycopg.connect(postgres_url, options=f"-c search_path={sessions_schema}") as conn:
        (text,) = conn.execute(
            "SELECT text FROM curated_docs WHERE scope = 'users/bob/memories' AND target = 'user'"
        ).fetchone() or ("",)
        archived = conn.execute(
            "SELECT content FROM curated_archive WHERE scope = 'users/bob/memories'"
        ).fetchall()
    assert text == "bob lives in a lighthouse"
    assert archived == [("bob likes the colour teal",)]
    # A worker with an empty home continues bob's session and sees bob's memory.
    pg = config(
        scope__user="bob",
        storage__backend="postgres",
        storage__url=postgres_url,
        storage__pg_schema=sessions_schema,
    )
    model = ScriptedModel([say("hi bob")])
    opts = SessionOptions(
        model=model, home=tmp_path / "worker", tokenizer=FakeTokenizer(), resume=bob_session
    )
    async with open_session(pg, opts) as s:
        assert "bob lives in a lighthouse" in s.prompt.text
        await run_turn(s, "hello again")
    assert [m.content for m in model.requests[0].messages][-2:] == ["noted", "hello again"]


def test_the_cli_migrates_and_refuses_without_a_server(
    tmp_path: Path,
    postgres_url: str,
    sessions_schema: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("The build uses make\n", encoding="utf-8")
    monkeypatch.setenv("KEEL_HOME", str(home))
    argv = ["storage", "migrate", "--to", "postgres", "--url", postgres_url, "--schema", sessions_schema]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "copied 1" in out and "verified" in out
    assert main(["storage", "migrate", "--to", "postgres"]) != 0
    assert "--url" in capsys.readouterr().err
