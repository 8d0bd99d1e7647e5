"""Frozen means frozen on resume: a skill created mid-session does not change the resumed
session's prompt (the skills slot is pinned on the row, as memory is), on the files backend
and on PostgreSQL; a row recorded before the pin existed says why its prompt changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.config import KeelConfig
from harness.events import Warning
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from tests.conftest import on_postgres

SKILL = "---\nname: {name}\ndescription: {description}\n---\n# Steps\n1. {step}\n"


def _options(model: ScriptedModel, home: Path, **more: object) -> SessionOptions:
    return SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), **more)  # type: ignore[arg-type]  # test helper


@pytest.fixture(params=["files", "postgres"])
def cfg(request: pytest.FixtureRequest) -> KeelConfig:
    if request.param == "files":
        return config(scope__user="ada")
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("sessions_schema")
    return config(**on_postgres(url, schema), scope__user="ada")


def _create(name: str, step: str) -> ScriptedModel:
    content = SKILL.format(name=name, description=f"How to {name}", step=step)
    return ScriptedModel(
        [call_tool("skill_manage", {"action": "create", "name": name, "content": content}), say("saved")]
    )


async def test_a_resumed_session_rebuilds_its_prompt_bytes_though_skills_were_created_since(
    tmp_path: Path, cfg: KeelConfig
) -> None:
    async with open_session(cfg, _options(_create("deploy-web", "run make deploy"), tmp_path / "home")) as s:
        await run_turn(s, "save the deploy steps")
        session_id, prompt = s.session_id, s.prompt.text
        assert "deploy-web" not in prompt  # frozen: the new skill waits for the next rebuild
    # another session (on PostgreSQL it could be another worker) creates one more skill meanwhile
    async with open_session(cfg, _options(_create("rollback", "run make rollback"), tmp_path / "home")) as s:
        await run_turn(s, "save the rollback steps")
        assert "deploy-web" in s.prompt.text
    again = ScriptedModel([say("welcome back")])
    async with open_session(cfg, _options(again, tmp_path / "home", resume=session_id)) as s:
        assert s.prompt.text == prompt
        await run_turn(s, "still there?")
    assert again.requests[0].system == prompt
    # a new session shows today's skills
    async with open_session(cfg, _options(ScriptedModel([]), tmp_path / "home")) as s:
        assert "deploy-web" in s.prompt.text and "rollback" in s.prompt.text


async def test_a_row_recorded_without_the_skills_pin_warns_that_the_prompt_shows_todays_skills(
    tmp_path: Path,
) -> None:
    cfg = config()
    home = tmp_path / "home"
    async with open_session(cfg, _options(_create("deploy-web", "run make deploy"), home)) as s:
        await run_turn(s, "save the deploy steps")
        session_id = s.session_id
    # as a row written before the skills slot was pinned
    conn = sqlite3.connect(home / "state.db")
    with conn:
        conn.execute("UPDATE sessions SET memory_snapshot = NULL WHERE id = ?", (session_id,))
    conn.close()
    async with open_session(cfg, _options(ScriptedModel([say("hi")]), home, resume=session_id)) as s:
        events = await run_turn(s, "again")
        assert "deploy-web" in s.prompt.text
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert any("before keel pinned the skills index" in w for w in warnings)
