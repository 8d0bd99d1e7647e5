"""OpenAI chat messages and tools → what a chat template receives, in one of two dialects.

Every dialect gives a template each message as templates expect it: `content` as text (the
text parts of a content list joined), assistant `tool_calls` with their `arguments` as a JSON
object when the text is one (Hugging Face's convention, which vLLM follows too: templates
write `arguments | tojson`), and `tool_call_id` (and `name`) on tool results.

- `hf`: what `apply_chat_template` and servers that run the template (vLLM, llama.cpp with
  `--jinja`) pass: `tools` only when the template reads the variable — a template that never
  does renders no tools, and neither does a server using it.
- `keel`: what keel's embedded server passes. A template that renders tools and tool calls
  itself (`native_tools`) gets them as above. For one that does not (SmolLM2's), the same
  protocol is spelled out in the system message (`prompts/text/local_tools.md`): the tool
  list in a `<tools>` block, tool calls as `<tool_call>{json}</tool_call>` in the assistant's
  text, results as `<tool_response>` blocks in a user turn (consecutive results share one).

`TemplateInput.owners` says which input messages each item came from, so a caller that cuts
the render per message (the cache meter) can map items back to messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import JsonValue

from prompts import load_text

__all__ = ["TOOL_CALL_CLOSE", "TOOL_CALL_OPEN", "Dialect", "TemplateInput", "call_text", "template_input"]

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

Dialect: TypeAlias = Literal["hf", "keel"]
JsonDict = dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class TemplateInput:
    """The `messages` and `tools` variables of one render."""

    items: list[JsonDict]
    tools: list[JsonDict] | None
    owners: tuple[tuple[int, int], ...]
    """For each item, the input messages `[start, stop)` it holds (empty for a block keel added)."""
    dropped_tools: bool = False
    """Tools were offered but this dialect renders none (the template never reads them)."""


def _text(content: JsonValue) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _arguments_value(raw: JsonValue) -> JsonValue:
    """Arguments as templates expect them: a JSON object when the text is one."""
    if isinstance(raw, str):
        try:
            parsed: JsonValue = json.loads(raw)
        except ValueError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw


def _calls_of(message: JsonDict) -> list[JsonDict]:
    calls = message.get("tool_calls")
    out: list[JsonDict] = []
    for c in calls if isinstance(calls, list) else []:
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(c, dict) and isinstance(fn, dict):
            out.append(
                {
                    "id": c.get("id", ""),
                    "type": "function",
                    "function": {
                        "name": fn.get("name", ""),
                        "arguments": _arguments_value(fn.get("arguments")),
                    },
                }
            )
    return out


def call_text(call: JsonDict) -> str:
    """A tool call as the spelled-out protocol writes it (and as native templates do)."""
    fn = call["function"]
    assert isinstance(fn, dict)
    body = {"name": fn["name"], "arguments": fn["arguments"]}
    return f"{TOOL_CALL_OPEN}\n{json.dumps(body, ensure_ascii=False)}\n{TOOL_CALL_CLOSE}"


def _item(m: JsonDict) -> JsonDict:
    role = m.get("role")
    item: JsonDict = {"role": role, "content": _text(m.get("content"))}
    calls = _calls_of(m) if role == "assistant" else []
    if calls:
        item["tool_calls"] = list(calls)
    if role == "tool" or "tool_call_id" in m:
        item["tool_call_id"] = m.get("tool_call_id") or ""
    if isinstance(m.get("name"), str):
        item["name"] = m["name"]
    return item


def _spelled_out(messages: Sequence[JsonDict], tools: Sequence[JsonDict]) -> TemplateInput:
    out: list[JsonDict] = []
    owners: list[tuple[int, int]] = []
    for i, m in enumerate(messages):
        role, content = m.get("role"), _text(m.get("content"))
        if role == "tool":
            response = f"<tool_response>\n{content}\n</tool_response>"
            if out and out[-1].get("_tool") is True:
                out[-1]["content"] = f"{out[-1]['content']}\n{response}"
                owners[-1] = (owners[-1][0], i + 1)
            else:
                out.append({"role": "user", "content": response, "_tool": True})
                owners.append((i, i + 1))
            continue
        if role == "assistant":
            parts = [content] if content else []
            parts += [call_text(c) for c in _calls_of(m)]
            out.append({"role": "assistant", "content": "\n".join(parts)})
        else:
            out.append({"role": role, "content": content})
        owners.append((i, i + 1))
    if tools:
        lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        block = load_text("local_tools").replace("$tools", lines).strip()
        if out and out[0].get("role") == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{block}"
        else:
            out.insert(0, {"role": "system", "content": block})
            owners.insert(0, (0, 0))
    for item in out:
        item.pop("_tool", None)
    return TemplateInput(out, None, tuple(owners))


def template_input(
    messages: Sequence[JsonDict],
    tools: Sequence[JsonDict],
    *,
    dialect: Dialect,
    native_tools: bool,
    reads_tools: bool,
) -> TemplateInput:
    """The template's `messages` and `tools` for OpenAI `messages` and `tools` (see the module docstring)."""
    if dialect == "keel" and not native_tools:
        return _spelled_out(messages, tools)
    passes = native_tools if dialect == "keel" else reads_tools
    items = [_item(m) for m in messages]
    owners = tuple((i, i + 1) for i in range(len(items)))
    if not tools:
        return TemplateInput(items, None, owners)
    if not passes:
        return TemplateInput(items, None, owners, dropped_tools=True)
    return TemplateInput(items, list(tools), owners)
