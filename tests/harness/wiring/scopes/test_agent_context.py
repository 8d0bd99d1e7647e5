"""The seeds' `agent_context`: a subagent never writes its parent's MEMORY.md/USER.md and a cron
run never shapes the user model — such sessions see the memory but get no memory tool."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import JsonValue

from harness.events import ToolResultReady
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session

ADD: dict[str, JsonValue] = {"action": "add", "target": "user", "content": "User is allergic to penicillin"}


async def test_a_subagents_memory_writes_never_reach_the_parents_files(home: Path) -> None:
    model = ScriptedModel([call_tool("memory", ADD), say("Noted."), say("all done")])
    async with open_session(config(), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        assert "memory" in s.tools.names  # the primary session keeps its tool
        result = await s.delegate("remember the allergy")
    assert result == "Noted."
    assert not (home / "memories" / "USER.md").exists()
    assert "memory" not in [t.name for t in model.requests[0].tools]  # the child was never offered it


@pytest.mark.parametrize("context", ["subagent", "cron"])
async def test_a_subagent_or_cron_session_sees_memory_but_has_no_memory_tool(
    home: Path, context: Literal["subagent", "cron"]
) -> None:
    (home / "memories").mkdir()
    (home / "memories" / "USER.md").write_text("User's name is Ada", encoding="utf-8")
    model = ScriptedModel([call_tool("memory", ADD), say("ok")])
    opts = SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), agent_context=context)
    async with open_session(config(), opts) as s:
        events = await run_turn(s, "remember my allergy")
        prompt = s.prompt.text
    assert "User's name is Ada" in prompt
    [refused] = [e for e in events if isinstance(e, ToolResultReady)]
    assert refused.is_error
    assert (home / "memories" / "USER.md").read_text(encoding="utf-8") == "User's name is Ada"
