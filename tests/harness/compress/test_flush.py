"""The flush request per mode, and what a flush reply may do (including a claimed save)."""

from __future__ import annotations

import pytest

from harness.compress.flush import build_flush_request, claims_a_save
from harness.types import Message, ToolSpec

TOOLS = (ToolSpec("memory", "Save a fact."), ToolSpec("session_search", "Search."))
HISTORY = (Message("user", "I live in Lisbon"), Message("assistant", "Nice."))


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


@pytest.mark.parametrize(
    "text",
    [
        "I have saved your timezone to memory.",
        "I've stored the deploy rule.",
        "Saved to memory: you prefer tabs.",
        "Your editor preference has been recorded.",
        "Memory updated with your name.",
        "I'll remember that you use PostgreSQL 15.",
    ],
)
def test_claims_of_a_save_are_recognised(text: str) -> None:
    assert claims_a_save(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Nothing to save.",
        "Nothing worth saving here.",
        "I did not save anything: it was all task progress.",
        "",
        "The user saved money on the trip.",
    ],
)
def test_declining_or_unrelated_text_is_not_a_claim(text: str) -> None:
    assert claims_a_save(text) is None
