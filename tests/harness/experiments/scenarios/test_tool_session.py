"""The `tool-session` scenario: a scripted coding session over the real MCP project server."""

from __future__ import annotations

from pathlib import Path

import anyio

from harness.experiments.runner import run_scenario
from harness.experiments.scenarios import builtin_scenario
from harness.experiments.scenarios.tool_session import tool_session
from harness.testing import config
from harness.trace import read_trace


def test_the_scenario_is_built_in_and_mostly_tool_calls() -> None:
    scenario = builtin_scenario("tool-session")
    assert scenario is not None and scenario == tool_session()
    calls = [c.name for t in scenario.turns for r in t.replies for c in r.tool_calls]
    assert {"proj__run_tests", "proj__read_file", "proj__grep", "proj__list_files"} <= set(calls)
    assert sum(t.compress for t in scenario.turns) == 1


async def test_a_short_run_fills_the_transcript_with_tool_output_and_compresses(tmp_path: Path) -> None:
    result = await run_scenario(
        tool_session(8, compress_at=6), config(), home=tmp_path, label="t", scripted=True
    )
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(result.trace_path)))
    purposes = [r.purpose for r in records]
    assert "summary" in purposes
    turn = next(r for r in reversed(records) if r.purpose == "turn")
    tool_text = "".join(m.content for m in turn.messages if m.role == "tool")
    assert "inventory/pricing.py" in tool_text  # the server's list_files output reached the model
    assert any(t.name == "proj__run_tests" for t in turn.tools)
