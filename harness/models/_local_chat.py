"""The embedded model's chat format: its own Jinja template in, native tool calls out.

`ChatFormat` renders OpenAI-style messages and tools with the GGUF's `tokenizer.chat_template`
the way Hugging Face's `apply_chat_template` does: Jinja's immutable sandbox with
`trim_blocks`/`lstrip_blocks`, a `tojson` that writes plain JSON (no HTML escaping, keys in
their given order, non-ASCII kept), `raise_exception`, and assistant tool-call arguments
passed as JSON objects, as templates expect. Nothing in the text is escaped: `O'Neill &
co` reaches the model as typed.

A template that knows tools (it mentions both `tools` and `tool_call`, as the ChatML/Qwen
family's do) renders them itself. For one that does not (SmolLM2's), the same protocol is
spelled out in the system message (`prompts/text/local_tools.md`): tool calls as
`<tool_call>{json}</tool_call>` in the assistant's text, results as `<tool_response>`
blocks in a user turn.

`parse_reply` turns generated text into content plus tool calls. It accepts what small
models really write — tagged blocks, an unclosed last block, a bare JSON object or a fenced
```json block naming a known tool, `arguments` as an object or as a JSON string,
`parameters` for `arguments` — and never raises: a block it cannot read becomes a call whose
arguments are the raw text, with the reason, so the harness answers it with a tool error
(a refused call the caller can show) instead of crashing or silently dropping it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import JsonValue

from prompts import load_text

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ChatFormat",
    "ParsedCall",
    "ParsedReply",
    "TemplateError",
    "parse_reply",
]

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
INVALID_CALL_NAME = "invalid_tool_call"

JsonDict = dict[str, JsonValue]


class TemplateError(Exception):
    """The chat template could not render this conversation."""


def _tojson(value: object, indent: int | None = None, ensure_ascii: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)


def _raise(message: str) -> None:
    raise jinja2.TemplateError(message)


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


def _call_text(call: JsonDict) -> str:
    fn = call["function"]
    assert isinstance(fn, dict)
    body = {"name": fn["name"], "arguments": fn["arguments"]}
    return f"{TOOL_CALL_OPEN}\n{json.dumps(body, ensure_ascii=False)}\n{TOOL_CALL_CLOSE}"


@dataclass(frozen=True, slots=True)
class ChatFormat:
    """A model's chat template and the special tokens it uses."""

    source: str
    bos_token: str = ""
    eos_token: str = ""
    _compiled: jinja2.Template = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            compiled = env.from_string(self.source)
        except jinja2.TemplateError as exc:
            raise TemplateError(f"the chat template does not compile: {exc}") from exc
        object.__setattr__(self, "_compiled", compiled)

    @property
    def native_tools(self) -> bool:
        """True when the template renders tools and tool calls itself."""
        return "tools" in self.source and "tool_call" in self.source

    def items(self, messages: list[JsonDict], tools: list[JsonDict]) -> list[JsonDict]:
        """The messages as this template receives them (see the module docstring)."""
        if self.native_tools:
            return [self._native_item(m) for m in messages]
        return self._spelled_out(messages, tools)

    def render(self, messages: list[JsonDict], tools: list[JsonDict], *, generation: bool = True) -> str:
        """The prompt text for `messages` (OpenAI chat format) and `tools` (OpenAI tool objects).

        Raises:
            TemplateError: the template refused the conversation.
        """
        items = self.items(messages, tools)
        try:
            return self._compiled.render(
                messages=items,
                tools=(tools or None) if self.native_tools else None,
                add_generation_prompt=generation,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except jinja2.TemplateError as exc:
            raise TemplateError(f"the chat template refused the conversation: {exc}") from exc

    @staticmethod
    def _native_item(m: JsonDict) -> JsonDict:
        role = m.get("role")
        item: JsonDict = {"role": role, "content": _text(m.get("content"))}
        if role == "assistant":
            calls = _calls_of(m)
            if calls:
                item["tool_calls"] = list(calls)
        if role == "tool":
            item["tool_call_id"] = m.get("tool_call_id", "")
            if isinstance(m.get("name"), str):
                item["name"] = m["name"]
        return item

    @staticmethod
    def _spelled_out(messages: list[JsonDict], tools: list[JsonDict]) -> list[JsonDict]:
        out: list[JsonDict] = []
        block = ""
        if tools:
            lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
            block = load_text("local_tools").replace("$tools", lines).strip()
        for m in messages:
            role, content = m.get("role"), _text(m.get("content"))
            if role == "tool":
                response = f"<tool_response>\n{content}\n</tool_response>"
                last = out[-1] if out else None
                if last is not None and last.get("_tool") is True:
                    last["content"] = f"{last['content']}\n{response}"
                else:
                    out.append({"role": "user", "content": response, "_tool": True})
                continue
            if role == "assistant":
                parts = [content] if content else []
                parts += [_call_text(c) for c in _calls_of(m)]
                out.append({"role": "assistant", "content": "\n".join(parts)})
                continue
            out.append({"role": role, "content": content})
        if block:
            if out and out[0].get("role") == "system":
                out[0]["content"] = f"{out[0]['content']}\n\n{block}"
            else:
                out.insert(0, {"role": "system", "content": block})
        for item in out:
            item.pop("_tool", None)
        return out


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One tool call read from the model's text. `error` is set when it could not be read."""

    name: str
    arguments: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedReply:
    content: str
    calls: tuple[ParsedCall, ...] = ()


_BLOCK = re.compile(re.escape(TOOL_CALL_OPEN) + r"(.*?)(?:" + re.escape(TOOL_CALL_CLOSE) + r"|$)", re.S)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')


def _call_from_json(text: str, *, tagged: bool) -> ParsedCall | None:
    """A call from one JSON object's text; None when an untagged text is not a call."""
    body = text.strip()
    try:
        data: JsonValue = json.loads(body)
    except ValueError as exc:
        if not tagged:
            return None
        found = _NAME.search(body)
        return ParsedCall(
            found.group(1) if found else INVALID_CALL_NAME,
            body,
            f"the tool call is not valid JSON ({exc}); it was not run",
        )
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(name, str) or not name:
        if not tagged:
            return None
        return ParsedCall(INVALID_CALL_NAME, body, "the tool call names no function; it was not run")
    args = data.get("arguments", data.get("parameters", {}))
    if isinstance(args, str):
        try:
            decoded: JsonValue = json.loads(args)
        except ValueError:
            return ParsedCall(name, args, "the tool call's arguments are not valid JSON; it was not run")
        args = decoded
    if not isinstance(args, dict):
        return ParsedCall(
            name, json.dumps(args, ensure_ascii=False), "the tool call's arguments are not a JSON object"
        )
    return ParsedCall(name, json.dumps(args, ensure_ascii=False))


def parse_reply(text: str, tool_names: frozenset[str]) -> ParsedReply:
    """Split generated text into its prose and its tool calls (never raises)."""
    if TOOL_CALL_OPEN in text:
        calls = tuple(
            call
            for call in (_call_from_json(m.group(1), tagged=True) for m in _BLOCK.finditer(text))
            if call is not None
        )
        prose = _BLOCK.sub("", text).strip()
        return ParsedReply(prose, calls)
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    candidate = fenced.group(1) if fenced else stripped
    if candidate.startswith("{"):
        call = _call_from_json(candidate, tagged=False)
        if call is not None and call.name in tool_names:
            return ParsedReply("", (call,))
    return ParsedReply(text)
