"""`harness.tools.deferral`: 300 MCP tools from three real server processes are deferred behind
`tool_search`; the agent finds one, calls it by its full name, and the system text and the
request's tool list stay byte-identical from the first request to the last."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness import testing as kit
from harness.cachemeter import lint
from harness.config import KeelConfig, McpServerConfig
from harness.events import ToolResultReady
from harness.tools.deferral import Deferral, ToolSearch, estimate_tokens
from harness.types import ToolSpec
from harness.wiring import SessionOptions, open_session


def _catalog(*domains: str, **env: str) -> KeelConfig:
    cfg = kit.config(skills__enabled="false", **env)
    servers = tuple(
        McpServerConfig(name=d, command=sys.executable, args=("-m", "harness.testing.catalog_server", d))
        for d in domains
    )
    return cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": servers})})


async def test_many_tools_are_found_through_tool_search_and_the_prefix_never_changes(home: Path) -> None:
    model = kit.ScriptedModel(
        [
            kit.call_tool("tool_search", {"query": "create a refund"}),
            kit.call_tool("billing__create_refund", {"target": "pay-17"}),
            kit.say("refunded"),
            kit.call_tool("tool_search", {"query": "archive_label"}),
            kit.call_tool("issues__archive_label", {"target": "wontfix"}),
            kit.call_tool("issues__no_such_tool", {}),
            kit.say("archived"),
        ]
    )
    cfg = _catalog("billing", "issues", "files")
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=kit.FakeTokenizer())) as s:
        deferred = s.tools.deferred
        first = await kit.run_turn(s, "refund payment pay-17")
        second = await kit.run_turn(s, "archive the wontfix label")
        trace = s.handles.trace_path
    assert len(deferred) == 300 and "files__lock_file" not in deferred  # names are verb_noun
    assert "files__delete_file" in deferred
    found = json.loads(next(e for e in first if isinstance(e, ToolResultReady)).content)
    names = [t["name"] for t in found["tools"]]
    assert names[0] == "billing__create_refund" and found["tools"][0]["parameters"]["required"] == ["target"]
    unknown = [e for e in second if isinstance(e, ToolResultReady) and e.name == "issues__no_such_tool"]
    assert unknown[0].is_error and "300 more are found with tool_search" in unknown[0].content
    ran = [
        e
        for e in (*first, *second)
        if isinstance(e, ToolResultReady) and e.name not in ("tool_search", "issues__no_such_tool")
    ]
    assert [r.content for r in ran] == [
        "billing.create_refund ran on pay-17",
        "issues.archive_label ran on wontfix",
    ]
    turns = [r for r in model.requests if r.purpose == "turn"]
    assert len(turns) == 7
    tool_lists = {json.dumps([(t.name, t.description, t.parameters) for t in r.tools]) for r in turns}
    assert len(tool_lists) == 1  # byte-identical for the whole session
    sent = [t.name for t in turns[0].tools]
    assert sent[-1] == "tool_search" and not any("__" in n for n in sent)
    assert "billing: archive_coupon" in turns[0].tools[-1].description  # the catalog
    assert len({r.messages[0].content for r in turns}) == 1  # the system text too
    assert trace is not None
    kit.assert_cache_stable(trace)
    assert not [f for f in lint(trace).findings if f.rule.startswith("tools")]  # the lint agrees


async def test_a_few_tools_are_sent_as_they_are(home: Path) -> None:
    model = kit.ScriptedModel([kit.say("ok")])
    cfg = _catalog("billing", model__context_window="400000")
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=kit.FakeTokenizer())) as s:
        await kit.run_turn(s, "hi")
        assert not s.tools.deferred
    sent = [t.name for t in model.requests[0].tools]
    assert "billing__create_refund" in sent and "tool_search" not in sent


def test_the_policy_defers_past_its_budget_and_search_ranks_names_over_descriptions() -> None:
    specs = [
        ToolSpec("a__send_mail", "Send an email.", {"type": "object"}),
        ToolSpec("b__mail_merge", "Merge a template.", {"type": "object"}),
        ToolSpec("c__print", "Print something to send by mail.", {"type": "object"}),
    ]
    assert Deferral(max_tokens=estimate_tokens(specs))(specs) is None
    search = Deferral(max_tokens=1)(specs)
    assert isinstance(search, ToolSearch)
    assert [s.name for s in search.search("send mail", 5)] == ["a__send_mail", "b__mail_merge", "c__print"]
    assert [s.name for s in search.search("print", 5)] == ["c__print"]
    assert [s.name for s in search.search("mail_merge", 1)] == ["b__mail_merge"]
