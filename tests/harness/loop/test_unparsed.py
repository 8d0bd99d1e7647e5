"""`HeldText`: streamed text with markup and calls written as text held back, for every split."""

from __future__ import annotations

import json

import pytest
from pydantic import JsonValue

from harness.loop._unparsed import HeldText, salvage_call, unparsed_call
from harness.types import JsonObject, ToolSpec


def _splits(text: str) -> list[list[str]]:
    """The text cut into deltas every way that matters: whole, per character, in pairs and threes."""
    out = [[text], list(text)]
    for size in (2, 3, 5):
        out.append([text[i : i + size] for i in range(0, len(text), size)])
    return out


def _feed(deltas: list[str]) -> tuple[str, HeldText]:
    held = HeldText()
    return "".join(held.feed(d) for d in deltas), held


LEAKS = [
    ("Sure. <|im_start|>assistant\nhi", "Sure. "),
    ("<|im_end|>", ""),
    ("Saving.<|eot_id|>", "Saving."),
    ('OK {"name": "memory", "arguments": {"action": "add"}}', "OK "),
    ('{\n  "name" : "memory",\n  "parameters": {}}', ""),
    ('Calling:\n```json\n{"name": "memory", "arguments": {}}\n```', "Calling:\n"),
    ("Let me <tool_call>{}</tool_call>", "Let me "),
    ('{"name": "add", "arguments": {"target": "user", "content": "Name: Ana"}}', ""),  # no such tool
    ('Saving.\n{{"name": "memory", "arguments": {}}}', "Saving.\n"),  # the template's doubled braces
]


@pytest.mark.parametrize(("text", "before"), LEAKS)
def test_markup_and_calls_written_as_text_never_stream_and_the_prose_before_them_does(
    text: str, before: str
) -> None:
    assert unparsed_call(text, {"memory"}) is not None  # the session refuses these replies
    for deltas in _splits(text):
        shown, _ = _feed(deltas)
        assert shown == before, deltas


ORDINARY = [
    "Plain prose with no specials at all.",
    "If a < b and b <= c then a < c; use <br> in HTML.",
    "A dict: {'a': 1} and {\"b\": 2}; a set {1, 2}.",
    "Run `ls -la` then ``` is a fence.",
    "Tokens like <| look odd but <|not a token are fine.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_streams_as_it_comes_with_at_most_a_short_tail_held(text: str) -> None:
    assert unparsed_call(text, {"memory"}) is None
    for deltas in _splits(text):
        shown, held = _feed(deltas)
        assert text.startswith(shown)
        assert len(text) - len(shown) <= 3, (deltas, shown)
        assert shown + held.release() == text


def test_json_that_is_no_call_is_held_to_the_end_then_released_whole() -> None:
    text = 'Your profile: {"name": "Ana", "editor": "neovim"} — anything else?'
    assert unparsed_call(text, {"memory"}) is None
    for deltas in _splits(text):
        shown, held = _feed(deltas)
        assert shown == "Your profile: "
        assert shown + held.release() == text


def test_a_reply_that_is_only_a_call_to_no_tool_is_refused_with_the_tools_named() -> None:
    why = unparsed_call(
        '```json\n{"name": "add", "arguments": {"target": "user"}}\n```', ["memory", "weather"]
    )
    assert why is not None and "'add', which is not a tool" in why and "memory, weather" in why
    # the same object inside an answer is an example, not a call
    assert unparsed_call('An example: {"name": "add", "arguments": {}} — done.', ["memory"]) is None


def _spec(name: str, actions: list[str] | None = None) -> ToolSpec:
    props: JsonObject = {"target": {"type": "string"}, "content": {"type": "string"}}
    if actions is not None:
        props["action"] = {"type": "string", "enum": list[JsonValue](actions)}
    return ToolSpec(name, "", {"type": "object", "properties": props})


def test_a_readable_call_is_salvaged_only_when_its_intent_is_unambiguous() -> None:
    memory, grep = _spec("memory", ["add", "replace", "remove"]), _spec("grep")

    def salvage(text: str, *specs: ToolSpec) -> tuple[str, JsonValue] | None:
        call = salvage_call(text, specs or (memory, grep), call_id="t1")
        return None if call is None else (call.name, json.loads(call.arguments))

    assert salvage('{"name": "grep", "arguments": {"content": "x"}}') == ("grep", {"content": "x"})
    assert salvage('```json\n{"name": "grep", "parameters": "{\\"content\\": \\"x\\"}"}\n```') == (
        "grep",
        {"content": "x"},
    )
    assert salvage('{"name": "grep", "arguments": {"content": "pricing\\.py"}}') == (
        "grep",
        {"content": "pricing\\.py"},
    )
    assert salvage('{"name": "add", "arguments": {"target": "user", "content": "Ana"}}') == (
        "memory",
        {"action": "add", "target": "user", "content": "Ana"},
    )
    # what a small model writes around a call it means: prose, the template's doubled
    # braces, tags spelled as text, text run on after it, an MCP tool without its prefix
    written = [
        'Saving: {"name": "grep", "arguments": {}}',
        'To find it I will call grep.\n```json\n{"name": "grep", "arguments": {}}\n```\nThen I read it.',
        '{{"name": "grep", "arguments": {}}}',
        '<tool_call>\n{"name": "grep", "arguments": {}}\n</tool_call>',
        '{"name": "grep", "arguments": {}}}\n```',
        '{"name": "proj__grep", "arguments": {}}',
    ]
    for text in written:
        assert salvage(text, memory, _spec("proj__grep")) == ("proj__grep", {}), text
    assert salvage('{"name": "grep", "arguments": {}}', _spec("a__grep"), _spec("b__grep")) is None  # which?
    refused = [
        'Saving: {"name": "add", "arguments": {"target": "user"}}',  # an action's name, inside prose
        '{"name": "grep", "arguments": {}} and {"name": "grep", "arguments": {"content": "y"}}',  # two
        '{"name": "nothing", "arguments": {}}',  # no such tool or action
        '{"name": "add", "arguments": {"colour": "red"}}',  # arguments the tool does not take
        '{"name": "add", "arguments": {"action": "remove", "content": "x"}}',  # two actions
        '{"name": "grep", "arguments": {}, "id": 3}',  # not the shape of a call
        '{"name": "grep", "arguments": [1]}',
        '{"name": "grep", "arguments": {"content": "x"',  # cut short
    ]
    for text in refused:
        assert salvage(text) is None, text
    assert salvage('{"name": "add", "arguments": {"content": "x"}}', memory, _spec("todo", ["add"])) is None
