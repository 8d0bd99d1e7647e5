"""`mcp.defer_native`: deferred MCP tools through Anthropic's own deferred loading, against a
real loopback HTTP server standing in for the Messages API and two real catalog servers.

The agent's behaviour is the one `tool_search` gives everywhere (search, then call a found tool
by its full name); on the wire the request's tool list carries every deferred tool marked
`defer_loading: true` (the same bytes on every request) and the search result goes back as
`tool_reference` blocks, which the API expands into the found tools' definitions.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from pydantic import JsonValue

from harness import testing as kit
from harness.config import KeelConfig, McpServerConfig
from harness.errors import ConfigError
from harness.wiring import SessionOptions, open_session
from tests.harness.models.faultserver import FaultServer, Reply, json_reply


def _message(*content: JsonValue, stop: str) -> Reply:
    return json_reply(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(content),
            "stop_reason": stop,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def _use(call_id: str, name: str, arguments: JsonValue) -> Reply:
    return _message({"type": "tool_use", "id": call_id, "name": name, "input": arguments}, stop="tool_use")


def _config(base_url: str, *, native: bool) -> KeelConfig:
    cfg = kit.config(
        skills__enabled="false",
        compression__enabled="false",
        model__provider="anthropic",
        model__name="claude-test",
        model__base_url=base_url,
        model__stream="false",
        model__api_key_env="KEEL_TEST_ANTHROPIC_KEY",
    )
    servers = tuple(
        McpServerConfig(name=d, command=sys.executable, args=("-m", "harness.testing.catalog_server", d))
        for d in ("billing", "issues")
    )
    return cfg.model_copy(
        update={"mcp": cfg.mcp.model_copy(update={"servers": servers, "defer_native": native})}
    )


async def _run(home: Path, *, native: bool) -> list[dict[str, JsonValue]]:
    script = [
        _use("toolu_1", "tool_search", {"query": "create a refund"}),
        _use("toolu_2", "billing__create_refund", {"target": "pay-17"}),
        _message({"type": "text", "text": "refunded"}, stop="end_turn"),
        _use("toolu_3", "tool_search", {"query": "archive label"}),
        _message({"type": "text", "text": "found it"}, stop="end_turn"),
    ]
    env = {**os.environ, "KEEL_TEST_ANTHROPIC_KEY": "sk-ant-test"}
    with FaultServer(script) as server:
        async with open_session(
            _config(server.base_url, native=native), SessionOptions(home=home, environ=env)
        ) as s:
            await kit.run_turn(s, "refund payment pay-17")
            await kit.run_turn(s, "find the tool that archives a label")
            ran = [m.content for m in s.transcript if m.role == "tool" and m.name == "billing__create_refund"]
        bodies = [r.body for r in server.requests if r.path == "/v1/messages"]
    assert ran == ["billing.create_refund ran on pay-17"]
    assert len(bodies) == 5 and all(isinstance(b, dict) for b in bodies)
    return [b for b in bodies if isinstance(b, dict)]


def _last_result(body: dict[str, JsonValue]) -> JsonValue:
    messages = body["messages"]
    assert isinstance(messages, list)
    last = messages[-1]
    assert isinstance(last, dict) and isinstance(last["content"], list)
    block = last["content"][-1]
    assert isinstance(block, dict) and block["type"] == "tool_result"
    return block.get("content")


async def test_native_deferral_lists_deferred_tools_once_and_answers_a_search_with_references(
    home: Path,
) -> None:
    bodies = await _run(home, native=True)
    tools = bodies[0]["tools"]
    assert isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    deferred = [t for t in tools if isinstance(t, dict) and t.get("defer_loading") is True]
    shown = [t["name"] for t in tools if isinstance(t, dict) and "defer_loading" not in t]
    assert len(deferred) == 200 and "tool_search" in shown
    names = [str(t["name"]) for t in deferred]
    assert names == sorted(names) and "billing__create_refund" in names
    refund = next(t for t in deferred if t["name"] == "billing__create_refund")
    schema = refund["input_schema"]
    assert isinstance(schema, dict) and schema["required"] == ["target"]
    # the tool list and the system text: the same bytes on every request
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1
    assert len({json.dumps(b["system"]) for b in bodies}) == 1
    # the search result goes back as references the API expands, the first hit first
    found = _last_result(bodies[1])
    assert isinstance(found, list) and found[0] == {
        "type": "tool_reference",
        "tool_name": "billing__create_refund",
    }
    assert all(isinstance(b, dict) and b["type"] == "tool_reference" for b in found)
    # a found tool's result is text as usual; a later search is references again
    assert _last_result(bodies[2]) == "billing.create_refund ran on pay-17"
    later = _last_result(bodies[4])
    assert (
        isinstance(later, list) and {"type": "tool_reference", "tool_name": "issues__archive_label"} in later
    )


async def test_without_native_deferral_the_search_result_carries_the_schemas_as_text(home: Path) -> None:
    bodies = await _run(home, native=False)
    tools = bodies[0]["tools"]
    assert isinstance(tools, list) and [t["name"] for t in tools if isinstance(t, dict)][-1] == "tool_search"
    assert not any(isinstance(t, dict) and "defer_loading" in t for t in tools)
    assert len(tools) < 10
    found = _last_result(bodies[1])
    assert isinstance(found, str) and json.loads(found)["tools"][0]["name"] == "billing__create_refund"
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1


def test_native_deferral_is_refused_for_a_provider_without_it() -> None:
    with pytest.raises(ConfigError, match=r"mcp\.defer_native needs model\.provider: anthropic"):
        kit.config(mcp__defer_native="true")
