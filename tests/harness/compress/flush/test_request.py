"""The flush request per mode and per shape: its tool list, tool choice and note."""

from __future__ import annotations

import pytest

from harness.compress.flush import FLUSH_SHAPES, FlushShape, build_flush_request, build_flush_shape_request
from harness.types import Message, ToolSpec
from memory import MEMORY_TOOL_NAME, memory_tool_schema

TOOLS = (ToolSpec("memory", "Save a fact."), ToolSpec("session_search", "Search."))
HISTORY = (Message("user", "I live in Lisbon"), Message("assistant", "Nice."))
MEMORY = ToolSpec("memory", "Save durable facts.", {"type": "object"})
SEARCH = ToolSpec("session_search", "Search old sessions.", {"type": "object"})
SYSTEM = "You are keel. Write entries as declarative facts: User prefers concise answers."


@pytest.mark.parametrize(
    ("mode", "reply", "tools", "choice"),
    [
        ("memory_only", "tool_calls", ["memory"], "auto"),
        ("cache_safe", "tool_calls", ["memory", "session_search"], "auto"),
        ("memory_only", "text_list", ["memory"], "none"),
        ("cache_safe", "text_list", ["memory", "session_search"], "none"),
        ("forced", "text_list", ["memory", "session_search"], "memory"),
        ("forced", "tool_calls", ["memory", "session_search"], "memory"),
    ],
)
def test_each_mode_sends_its_tool_list_and_tool_choice(
    mode: str, reply: str, tools: list[str], choice: str
) -> None:
    request = build_flush_request(
        system="sys",
        messages=HISTORY,
        tools=TOOLS,
        mode=mode,  # type: ignore[arg-type]
        reply=reply,  # type: ignore[arg-type]
        max_tokens=100,
    )
    assert [t.name for t in request.tools] == tools
    assert request.tool_choice == choice
    assert request.messages[:2] == HISTORY and request.purpose == "flush"


def test_a_flush_without_the_memory_tool_is_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match="needs the memory tool"):
        build_flush_request(system="s", messages=HISTORY, tools=TOOLS[1:], mode="forced", max_tokens=None)


@pytest.mark.parametrize("shape", FLUSH_SHAPES)
def test_every_shape_keeps_system_and_tools_and_only_appends_its_note(shape: FlushShape) -> None:
    req = build_flush_shape_request(
        shape, system=SYSTEM, messages=HISTORY, tools=(MEMORY, SEARCH), max_tokens=200
    )
    assert req.system == SYSTEM and req.tools == (MEMORY, SEARCH)
    assert req.messages[:-1] == HISTORY and req.messages[-1].role == "user"
    assert req.purpose == "flush" and req.max_tokens == 200
    assert (
        req.tool_choice
        == {"free_calls": "auto", "forced_call": "memory", "forced_batch": "memory", "text_list": "none"}[
            shape
        ]
    )


def test_a_forced_shape_without_the_memory_tool_falls_back_to_no_tool_choice() -> None:
    req = build_flush_shape_request(
        "forced_batch", system=SYSTEM, messages=HISTORY, tools=(SEARCH,), max_tokens=None
    )
    assert req.tool_choice == "none"


def test_the_forced_flush_names_the_tool_the_memory_tool_defines() -> None:
    assert memory_tool_schema("Save a fact.")["name"] == MEMORY_TOOL_NAME
    request = build_flush_request(
        system="s", messages=HISTORY, tools=TOOLS, mode="forced", reply="text_list", max_tokens=None
    )
    assert request.tool_choice == MEMORY_TOOL_NAME
