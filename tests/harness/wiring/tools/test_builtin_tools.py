"""The built-in tools as `open_session` wires them: `session_search` summaries are answered by
`compression.summary_model` when one is set (a summary, like compression's), not the main model."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

from harness.loop.parts import call_path
from harness.loop.system_prompt import PromptAssembler
from harness.testing import FakeTokenizer, RecordingRecorder, ScriptedModel, config, say
from harness.tokens import TokenCounter
from harness.wiring import SessionOptions, open_session
from harness.wiring.tool_port import _session_search
from memory import Principal, StoredMessage, open_session_db
from memory.providers import CORE_TOOL_NAMES


async def test_search_summaries_are_answered_by_the_summary_model(tmp_path: Path) -> None:
    main, summaries = ScriptedModel([]), ScriptedModel([say("They planned the zeppelin trip.")])
    tokenizer = FakeTokenizer()

    async def static() -> Mapping[str, str]:
        return {}

    path = call_path(
        model=main,
        summary_model=summaries,
        recorder=RecordingRecorder(),
        counter=TokenCounter(tokenizer),
        assembler=PromptAssembler(order=(), static=static, tokenizer=tokenizer),  # type: ignore[arg-type]  # no slots needed
        memory=None,
    )
    async with open_session_db(tmp_path / "state.db") as db:
        await db.create_session("old", source="cli", started_at=time.time() - 3600)
        await db.append_message(
            "old", StoredMessage(role="user", content="book the zeppelin trip", timestamp=time.time() - 3600)
        )
        tool = _session_search(
            config(session_search__summarize="true"),
            db,
            calls=path.calls,
            transcript=path.transcript,
            principal=Principal(),
        )
        reply = json.loads(await tool.handle({"query": "zeppelin"}))
    assert reply["success"] is True
    assert [r.purpose for r in summaries.requests] == ["search"]
    assert main.requests == []
    assert "They planned the zeppelin trip." in json.dumps(reply)


async def test_the_core_tool_names_are_exactly_the_tools_keel_registers_itself(home: Path) -> None:
    # Every built-in tool on (the defaults), no provider, no MCP server, no user tools: what
    # the registry holds is keel's own tools, and external providers may shadow none of them.
    cfg = config()
    assert cfg.session_search.enabled and cfg.skills.enabled
    async with open_session(
        cfg, SessionOptions(model=ScriptedModel([]), home=home, tokenizer=FakeTokenizer())
    ) as s:
        registered = set(s.tools.names)
    assert registered == CORE_TOOL_NAMES
