"""The memory tool description and its slot-1 guidance ship as prompt text and say what they must."""

from __future__ import annotations

import json

from memory import memory_tool_schema
from prompts._text import load_text, text_names


def test_both_memory_texts_ship_with_the_package() -> None:
    assert {"tool_memory", "guidance_memory"} <= set(text_names())


def test_the_tool_description_covers_targets_actions_batches_and_what_to_skip() -> None:
    text = load_text("tool_memory")
    for needle in (
        '"user"',
        '"memory"',
        '"add"',
        '"replace"',
        '"remove"',
        '"operations"',
        "do not repeat",
        "Do not save",
    ):
        assert needle in text, needle
    schema = memory_tool_schema(text)
    assert json.loads(json.dumps(schema))["description"] == text


def test_the_guidance_asks_for_declarative_facts_and_says_where_each_kind_goes() -> None:
    text = load_text("guidance_memory")
    assert "declarative facts, not instructions" in text
    assert 'target "user"' in text
    assert 'target "memory"' in text
    assert "Skip" in text
    assert "merge related entries" in text
    assert "\n" not in text  # one paragraph
