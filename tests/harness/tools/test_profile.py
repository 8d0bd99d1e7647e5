"""The compact tool profile for small local models: short descriptions, fewer tools, the same
bytes every time; API models keep the tools as registered."""

from __future__ import annotations

import json

from harness.testing import FakeMemory, ScriptedModel, config, make_session, run_turn, say
from harness.tools import RawTool, ToolOutput, ToolRegistry
from harness.tools.builtin import spec_from_schema
from harness.tools.profile import HIDDEN_WHEN_COMPACT, compact_spec, first_sentence, profile_for
from harness.types import ToolCall, ToolSpec
from memory import memory_tool_schema
from prompts import load_text

LONG = ToolSpec(
    "lookup",
    "Look a word up in the team glossary. It returns the definition and who wrote it.\n\nMore prose here.",
    {
        "type": "object",
        "title": "Lookup",
        "properties": {
            "word": {
                "type": "string",
                "description": "The word. Case does not matter.",
                "examples": ["keel"],
            },
            "limit": {"type": "integer", "description": "x" * 300},
        },
        "required": ["word"],
    },
)


def test_a_users_tool_keeps_its_first_sentence_and_its_schema_minus_prose() -> None:
    spec = compact_spec(LONG)
    assert spec is not None
    assert spec.description == "Look a word up in the team glossary."
    props = spec.parameters["properties"]
    assert props == {
        "word": {"type": "string", "description": "The word."},
        "limit": {"type": "integer", "description": "x" * 99 + "…"},
    }
    assert spec.parameters["required"] == ["word"] and "title" not in spec.parameters
    assert compact_spec(LONG) == spec, "a pure function: the tool list stays byte-stable"


def test_keels_memory_tool_gets_its_hand_written_short_description() -> None:
    full = spec_from_schema(memory_tool_schema(load_text("tool_memory")))
    spec = compact_spec(full)
    assert spec is not None and spec.description == load_text("tool_memory_compact")
    assert len(json.dumps(spec.parameters)) < len(json.dumps(full.parameters))
    assert set(spec.parameters["properties"]) == set(full.parameters["properties"])  # type: ignore[arg-type]


def test_first_sentence_caps_and_keeps_short_text() -> None:
    assert first_sentence("Short one", 100) == "Short one"
    assert first_sentence("One. Two.", 100) == "One."
    assert first_sentence("abcdefghij", 5) == "abcd…"


async def _ok(_: str) -> ToolOutput:
    return ToolOutput("ran", False)


async def test_a_hidden_tool_is_not_shown_but_a_call_to_it_still_runs() -> None:
    registry = ToolRegistry(profile=profile_for("compact"))
    hidden = next(iter(sorted(HIDDEN_WHEN_COMPACT)))
    registry.add(RawTool(ToolSpec(hidden, "Hidden.", {"type": "object"}), _ok))
    registry.add(RawTool(LONG, _ok))
    assert [s.name for s in registry.specs()] == ["lookup"]
    result, _ = await registry.run(ToolCall("c1", hidden, "{}"))
    assert result.content == "ran" and not result.is_error
    assert profile_for("full") is None


def test_auto_is_compact_only_for_the_local_model_keel_runs_itself() -> None:
    assert config().tool_profile(own_model=True) == "compact"
    assert config().tool_profile(own_model=False) == "full"  # a client handed to the session
    assert config(model__provider="openai").tool_profile(own_model=True) == "full"
    assert config(prompt__tool_profile="compact").tool_profile(own_model=False) == "compact"


async def test_a_compact_session_shows_short_tools_and_a_full_one_the_tools_as_registered() -> None:
    shown: dict[str, list[ToolSpec]] = {}
    for profile in ("compact", "full"):
        model = ScriptedModel([say("ok")])
        cfg = config(prompt__tool_profile=profile)
        async with make_session(model, memory=FakeMemory(), cfg=cfg, extra_tools=[RawTool(LONG, _ok)]) as s:
            await run_turn(s, "hi")
        shown[profile] = list(model.requests[0].tools)
    local = {t.name: t for t in shown["compact"]}
    api = {t.name: t for t in shown["full"]}
    assert api["lookup"] == LONG
    assert local["lookup"].description == "Look a word up in the team glossary."
