"""Chat-completions request bodies and (non-streamed) replies, as plain JSON.

The request body is built in a fixed key order and every message's text is its
`wire_content`; assistant tool-call arguments are replayed as the raw strings the model
produced, so a message serializes to the same bytes on every request.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import JsonValue

from harness.errors import ModelRequestError, ModelResponseError
from harness.models._stream import cap_reply
from harness.types import JsonObject, Message, ModelReply, ModelRequest, ToolCall, ToolSpec
from harness.usage import normalize_openai_usage

__all__ = [
    "ToolResultStyle",
    "build_body",
    "parse_completion",
    "system_messages",
    "tool_call_from_wire",
    "tool_json",
]

ToolResultStyle = Literal["native", "as_user"]


def _message(message: Message, tool_results: ToolResultStyle) -> JsonObject:
    if message.role == "tool":
        if tool_results == "as_user":
            label = f"[result of tool call {message.name or 'tool'} {message.tool_call_id or ''}]".replace(
                " ]", "]"
            )
            return {"role": "user", "content": f"{label}\n{message.wire_content}"}
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.wire_content}
    # Always a string, "" for a tool-calling turn without text: OpenAI also accepts null
    # there, but llama-cpp-python's server rejects a null assistant content outright.
    out: JsonObject = {"role": message.role, "content": message.wire_content}
    if message.tool_calls:
        # Only present when non-empty: chat templates (llama-cpp-python's chatml-function-
        # calling among them) test `'tool_calls' in message`.
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    return out


def _tool_choice(request: ModelRequest) -> JsonValue:
    choice = request.tool_choice
    if choice in ("auto", "none", "required"):
        return choice
    if choice not in {t.name for t in request.tools}:
        names = ", ".join(repr(t.name) for t in request.tools) or "none"
        raise ModelRequestError(
            f"tool_choice {choice!r} names no tool in the request (tools: {names}); "
            "use 'auto', 'none', 'required' or one of the tool names"
        )
    return {"type": "function", "function": {"name": choice}}


def tool_json(tool: ToolSpec) -> JsonObject:
    """One entry of `tools`."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def system_messages(request: ModelRequest, *, split: bool) -> list[JsonValue]:
    """The leading system message(s): with `split`, a system prompt whose stable prefix ends
    before its end (`stable_prefix_chars`) becomes two messages, the stable part first, so a
    chat template renders the rest after the tool schemas (see `PromptAssembler`)."""
    system = request.system
    if not system:
        return []
    cut = request.stable_prefix_chars or 0
    if split and 0 < cut < len(system) and system[:cut].strip():
        return [
            {"role": "system", "content": system[:cut].rstrip()},
            {"role": "system", "content": system[cut:].lstrip("\n")},
        ]
    return [{"role": "system", "content": system}]


def build_body(
    request: ModelRequest,
    *,
    model: str,
    stream: bool,
    tool_results: ToolResultStyle = "native",
    split_system: bool = False,
) -> JsonObject:
    """The JSON body of `POST /chat/completions` for `request` (`split_system`: see
    `system_messages`)."""
    messages: list[JsonValue] = system_messages(request, split=split_system)
    messages.extend(_message(m, tool_results) for m in request.messages)
    body: JsonObject = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [tool_json(t) for t in request.tools]
        body["tool_choice"] = _tool_choice(request)
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _arguments(raw: JsonValue) -> str:
    if isinstance(raw, str):
        return raw
    # A few servers (older Ollama builds) send the arguments as an object; the raw text
    # is then our own canonical dump of it.
    return "{}" if raw is None else json.dumps(raw, ensure_ascii=False)


def tool_call_from_wire(raw: JsonValue, *, position: int, what: str) -> ToolCall:
    """One complete `tool_calls[]` entry of a non-streamed reply."""
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(function, dict):
        raise ModelResponseError(f"{what}: tool call #{position} has no function object: {raw!r}")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ModelResponseError(f"{what}: tool call #{position} has no function name: {raw!r}")
    call_id = raw.get("id")
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call_{position}",
        name=name,
        arguments=_arguments(function.get("arguments")),
    )


def parse_completion(data: JsonObject, *, what: str, fallback_model: str) -> ModelReply:
    """A `ModelReply` from a non-streamed chat-completions JSON object."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelResponseError(f"{what}: the reply has no choices: {json.dumps(data)[:200]!r}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ModelResponseError(f"{what}: choices[0] has no message object")
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    raw_calls = message.get("tool_calls")
    calls = tuple(
        tool_call_from_wire(c, position=i, what=what)
        for i, c in enumerate(raw_calls if isinstance(raw_calls, list) else [])
    )
    usage = data.get("usage")
    timings = data.get("timings")
    finish = choice.get("finish_reason")
    model = data.get("model")
    reply = ModelReply(
        message=Message(role="assistant", content=text, tool_calls=calls),
        usage=normalize_openai_usage(
            usage if isinstance(usage, dict) else None, timings=timings if isinstance(timings, dict) else None
        ),
        finish_reason=finish if isinstance(finish, str) else None,
        model=model if isinstance(model, str) else fallback_model,
    )
    return cap_reply(reply, finish_reason="length")
