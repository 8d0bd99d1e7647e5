"""End to end on the embedded default model: it calls an MCP tool and uses the result.

Small on purpose: one session, one question whose answer is only in the project server's
files, memory and the other built-in tools off so the model's choice is the MCP tool.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from harness.config import McpServerConfig
from harness.events import ToolCallStarted, ToolResultReady, TurnEnded
from harness.models.factory import local_client
from harness.models.local import LocalModel
from harness.testing import config, run_turn
from harness.wiring import SessionOptions, open_session


async def test_the_default_model_calls_an_mcp_tool_and_answers_from_its_result(
    local_model: LocalModel, home: Path
) -> None:
    cfg = config(
        model__temperature="0",
        model__max_output_tokens="160",
        limits__max_iterations="3",
        session_search__enabled="false",
        skills__enabled="false",
        memory__memory_enabled="false",
        memory__user_profile_enabled="false",
    )
    server = McpServerConfig(
        name="proj", command=sys.executable, args=("-m", "harness.testing.project_server")
    )
    cfg = cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": (server,)})})
    async with httpx.AsyncClient(timeout=600) as http:
        model = local_client(http, local_model.base_url, local_model.model, 600, api_key=local_model.api_key)
        async with open_session(cfg, SessionOptions(model=model, home=home)) as session:
            events = await run_turn(
                session, "Use the proj__read_file tool to read README.md, then tell me what the project is."
            )
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert started and started[0].name == "proj__read_file"
    assert results and "inventory" in results[0].content and not results[0].is_error
    final = [e for e in events if isinstance(e, TurnEnded)][-1].final_text
    assert "inventory" in final.lower() or "stock" in final.lower()
