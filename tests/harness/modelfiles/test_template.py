"""The one chat-template sandbox: what keel's server renders equals the template's own output."""

from __future__ import annotations

import json
from datetime import datetime

import jinja2
import pytest
from pydantic import JsonValue

from harness.config import LocalModelName
from harness.errors import ChatTemplateError
from harness.modelfiles import ChatTemplate, TemplateRenderer, read_gguf_metadata
from harness.models.local import BUILTIN_MODELS, installed_part

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
    chat = TemplateRenderer(ChatTemplate(QWEN_LIKE))
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
    chat = TemplateRenderer(ChatTemplate(source))
    if chat.native_tools:
        assert chat.render(CONVERSATION, TOOLS) == _reference(source, CONVERSATION, TOOLS)
    else:
        # A template without tool support gets the protocol spelled out in its system
        # message and the calls/results as text; the template itself renders those items.
        items = chat.prepare(CONVERSATION, TOOLS, dialect="keel").items
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
    chat = TemplateRenderer(ChatTemplate(smol_like))
    assert not chat.native_tools
    plain: list[JsonDict] = [{"role": "user", "content": "Tom & Jerry's show"}]
    assert chat.render(plain, []) == "<|im_start|>user\nTom & Jerry's show<|im_end|>\n<|im_start|>assistant\n"


def test_tojson_takes_the_keyword_arguments_templates_pass_it() -> None:
    source = (
        "{{ tools | tojson(indent=2) }}|{{ tools | tojson(separators=(',', ':'), sort_keys=true) }}"
        "|{{ 'é' | tojson(ensure_ascii=true) }}"
    )
    tools: list[JsonDict] = [{"b": 1, "a": "<é>"}]
    out = TemplateRenderer(ChatTemplate(source)).render_items([], tools)
    assert out == '[\n  {\n    "b": 1,\n    "a": "<é>"\n  }\n]|[{"a":"<é>","b":1}]|"\\u00e9"'


def test_the_generation_tag_renders_its_body() -> None:
    source = (
        "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}[{{ m.content }}]"
        "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}"
    )
    items: list[JsonDict] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    assert TemplateRenderer(ChatTemplate(source)).render_items(items, None) == "hi[yo]"


def test_strftime_now_reads_the_clock_the_caller_passes() -> None:
    chat = TemplateRenderer(ChatTemplate("{{ strftime_now('%Y-%m-%d') }}"))
    when = datetime(2026, 11, 25, 12, 0).timestamp()  # local time, as a server's clock reads
    assert chat.render_items([], None, when=when) == "2026-11-25"
    assert chat.render_items([], None, when=when + 86_400) == "2026-11-26"


def test_both_dialects_pass_tool_call_arguments_as_json_objects() -> None:
    for dialect in ("hf", "keel"):
        items = TemplateRenderer(ChatTemplate(QWEN_LIKE)).prepare(CONVERSATION, TOOLS, dialect=dialect).items
        call = items[2]["tool_calls"]
        assert isinstance(call, list) and isinstance(call[0], dict)
        assert call[0]["function"] == {"name": "memory", "arguments": {"content": "Sam O'Neill & vim"}}


def test_a_template_that_does_not_compile_or_refuses_is_a_chat_template_error() -> None:
    with pytest.raises(ChatTemplateError, match="does not compile"):
        TemplateRenderer(ChatTemplate("{% for %}", origin="bad.jinja"))
    refusing = TemplateRenderer(ChatTemplate("{{ raise_exception('roles must alternate') }}"))
    with pytest.raises(ChatTemplateError, match="roles must alternate"):
        refusing.render([], [])
