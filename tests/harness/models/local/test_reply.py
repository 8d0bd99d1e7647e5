"""The embedded model's replies: native tool calls read back out of generated text."""

from __future__ import annotations

import json

import pytest

from harness.models.local._reply import parse_reply

NAMES = frozenset({"memory", "session_search"})


def test_a_tagged_qwen_call_becomes_a_tool_call_with_its_arguments() -> None:
    text = '<tool_call>\n{"name": "memory", "arguments": {"action": "add", "target": "user", "content": "Sam uses vim"}}\n</tool_call>'
    reply = parse_reply(text, NAMES)
    assert reply.content == ""
    assert [(c.name, json.loads(c.arguments), c.error) for c in reply.calls] == [
        ("memory", {"action": "add", "target": "user", "content": "Sam uses vim"}, None)
    ]


def test_several_calls_prose_and_an_unclosed_last_block_are_all_read() -> None:
    text = (
        "Saving two facts.\n<tool_call>\n"
        '{"name": "memory", "arguments": {"content": "a"}}\n</tool_call>\n<tool_call>\n'
        '{"name": "memory", "arguments": "{\\"content\\": \\"b\\"}"}'
    )
    reply = parse_reply(text, NAMES)
    assert reply.content == "Saving two facts."
    assert [json.loads(c.arguments) for c in reply.calls] == [{"content": "a"}, {"content": "b"}]


def test_a_bare_or_fenced_json_call_naming_a_known_tool_is_a_call() -> None:
    bare = parse_reply('{"name": "memory", "parameters": {"content": "x"}}', NAMES)
    fenced = parse_reply('```json\n{"name": "session_search", "arguments": {"query": "q"}}\n```', NAMES)
    assert [(c.name, c.arguments) for c in bare.calls] == [("memory", '{"content": "x"}')]
    assert [c.name for c in fenced.calls] == ["session_search"]


def test_json_that_names_no_known_tool_stays_text() -> None:
    text = '{"name": "Sam", "arguments": {}}'
    reply = parse_reply(text, NAMES)
    assert reply.calls == () and reply.content == text


@pytest.mark.parametrize(
    ("text", "name", "reason"),
    [
        (
            '<tool_call>\n{"name": "memory", "arguments": {"content": "cut off\n</tool_call>',
            "memory",
            "not valid JSON",
        ),
        ("<tool_call>\nfunctions.memory:\n</tool_call>", "invalid_tool_call", "not valid JSON"),
        (
            '<tool_call>\n{"arguments": {"content": "x"}}\n</tool_call>',
            "invalid_tool_call",
            "names no function",
        ),
        (
            '<tool_call>\n{"name": "memory", "arguments": "{oops"}\n</tool_call>',
            "memory",
            "arguments are not valid JSON",
        ),
        ('<tool_call>\n{"name": "memory", "arguments": [1, 2]}\n</tool_call>', "memory", "not a JSON object"),
    ],
)
def test_malformed_calls_become_refused_records_not_crashes(text: str, name: str, reason: str) -> None:
    (call,) = parse_reply(text, NAMES).calls
    assert call.name == name
    assert call.error is not None and reason in call.error


def test_smollm2_style_plain_text_is_just_content() -> None:
    reply = parse_reply("functions.memory:", NAMES)
    assert reply.calls == () and reply.content == "functions.memory:"
