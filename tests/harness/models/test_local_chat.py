"""The embedded model's chat format: its own template in, native tool calls out."""

from __future__ import annotations

import json

import jinja2
import pytest
from pydantic import JsonValue

from harness.cachemeter import read_gguf_metadata
from harness.config import LocalModelName
from harness.models._local_chat import ChatFormat, parse_reply
from harness.models._local_weights import BUILTIN_MODELS, installed_part

JsonDict = dict[str, JsonValue]

# The ChatML/Qwen2.5 tool protocol, as Qwen2.5-Coder's GGUF template spells it (trimmed to
# what these tests exercise); the real templates are read from installed GGUFs below.
QWEN_LIKE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}{{- '\\n</tools><|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and tools %}"
    "{%- elif message.role == 'user' or message.role == 'system' or (message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant' }}"
    "{%- for tool_call in message.tool_calls %}{%- set tool_call = tool_call.function %}"
    '{{- \'\\n<tool_call>\\n{"name": "\' + tool_call.name + \'", "arguments": \' }}{{- tool_call.arguments | tojson }}'
    "{{- '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + "
    "'\\n</tool_response><|im_end|>\\n' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

TOOLS: list[JsonDict] = [
    {
        "type": "function",
        "function": {
            "name": "memory",
            "description": "Save the user's facts — e.g. \"O'Neill & co\" <verbatim>.",
            "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
        },
    }
]
CONVERSATION: list[JsonDict] = [
    {"role": "system", "content": "You keep notes for O'Neill & Sons."},
    {"role": "user", "content": "Remember: I'm Sam O'Neill & I use vim <3"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "memory", "arguments": '{"content": "Sam O\'Neill & vim"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"success": true, "note": "O\'Neill & co"}'},
    {"role": "assistant", "content": "Saved: O'Neill & vim."},
    {"role": "user", "content": "Thanks & bye"},
]


def _reference(source: str, messages: list[JsonDict], tools: list[JsonDict] | None) -> str:
    """The template rendered as Hugging Face's apply_chat_template does, independently of
    keel's code: plain Jinja with trim/lstrip blocks, JSON-object arguments, plain tojson."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, ensure_ascii=False, indent=indent)
    items = json.loads(json.dumps(messages))
    for m in items:
        for c in m.get("tool_calls", []):
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return env.from_string(source).render(messages=items, tools=tools, add_generation_prompt=True)


def test_rendering_matches_the_template_with_tools_results_and_unescaped_text() -> None:
    chat = ChatFormat(QWEN_LIKE)
    assert chat.native_tools
    prompt = chat.render(CONVERSATION, TOOLS)
    assert prompt == _reference(QWEN_LIKE, CONVERSATION, TOOLS)
    assert "O'Neill & Sons" in prompt
    assert '"description": "Save the user\'s facts — e.g. \\"O\'Neill & co\\" <verbatim>."' in prompt
    assert (
        '<tool_call>\n{"name": "memory", "arguments": {"content": "Sam O\'Neill & vim"}}\n</tool_call>'
        in prompt
    )
    assert '<tool_response>\n{"success": true, "note": "O\'Neill & co"}\n</tool_response>' in prompt
    assert "&#39;" not in prompt and "&amp;" not in prompt and "\\u0027" not in prompt
    assert prompt.endswith("<|im_start|>user\nThanks & bye<|im_end|>\n<|im_start|>assistant\n")


def _installed_template(name: LocalModelName) -> str:
    model = BUILTIN_MODELS[name]
    # A GGUF's metadata (the template among it) sits at the start of the file: the first
    # part of a split model holds all of it.
    part = installed_part(model.parts[0])
    if part is None:
        pytest.skip(f"{model.title} is not installed here ({model.install})")
    template = read_gguf_metadata(part, ["tokenizer.chat_template"]).get("tokenizer.chat_template")
    assert isinstance(template, str)
    return template


@pytest.mark.parametrize("name", ["smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
def test_rendering_equals_the_gguf_templates_own_output(name: LocalModelName) -> None:
    source = _installed_template(name)
    chat = ChatFormat(source)
    if chat.native_tools:
        assert chat.render(CONVERSATION, TOOLS) == _reference(source, CONVERSATION, TOOLS)
    else:
        # A template without tool support gets the protocol spelled out in its system
        # message and the calls/results as text; the template itself renders those items.
        items = chat.items(CONVERSATION, TOOLS)
        assert chat.render(CONVERSATION, TOOLS) == _reference(source, items, None)
        prompt = chat.render(CONVERSATION, TOOLS)
        assert "<tools>" in prompt and "O'Neill & Sons" in prompt
        assert '<tool_response>\n{"success": true, "note": "O\'Neill & co"}\n</tool_response>' in prompt
        assert '"arguments": {"content": "Sam O\'Neill & vim"}' in prompt


def test_a_template_without_tools_keeps_plain_conversations_untouched() -> None:
    smol_like = (
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
        "'<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    chat = ChatFormat(smol_like)
    assert not chat.native_tools
    plain: list[JsonDict] = [{"role": "user", "content": "Tom & Jerry's show"}]
    assert chat.render(plain, []) == "<|im_start|>user\nTom & Jerry's show<|im_end|>\n<|im_start|>assistant\n"


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
