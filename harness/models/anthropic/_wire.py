"""Messages-API request bodies, cache breakpoints and (non-streamed) replies, as plain JSON.

Mapping from our transcript:

- the system prompt becomes a list of text blocks; `tool` messages become `tool_result`
  blocks inside a user message; assistant tool calls become `tool_use` blocks;
- consecutive messages that map to the same role are merged into one wire message, as the
  API requires strict user/assistant alternation (a run of tool results is one user turn);
- empty text blocks are left out (the API rejects them), so a message with nothing to say
  contributes nothing.

Native deferred loading (`ModelRequest.deferred_tools`): those tools follow the others in
`tools`, each with `defer_loading: true` (the API loads one only when a result references it),
and a tool result whose JSON names deferred tools under `"tools"` (keel's `tool_search`) is
sent as `tool_reference` blocks, which the API expands into their definitions in place.

Cache breakpoints (at most 4, all with the session's TTL): the end of the system prompt,
plus the end of its stable prefix when `stable_prefix_chars` splits it, then the ends of
the last wire messages with the markers left. Ends of *wire* messages (not of individual
transcript messages) are marked so that after a reply with several tool calls the previous
request's last breakpoint is still among this request's breakpoints, and it hits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

from harness.errors import ModelRequestError, ModelResponseError
from harness.models._stream import cap_reply
from harness.types import CacheBreakpoint, JsonObject, Message, ModelReply, ModelRequest, ToolCall, ToolSpec
from harness.usage import normalize_anthropic_usage

__all__ = ["MAX_BREAKPOINTS", "CacheTTL", "build_body", "parse_message", "tool_input"]

CacheTTL = Literal["5m", "1h"]
MAX_BREAKPOINTS = 4


@dataclass(slots=True)
class _WireMessage:
    role: Literal["user", "assistant"]
    blocks: list[JsonObject] = field(default_factory=list)
    last_index: int = 0
    """Index in `request.messages` of the message that produced the last block."""


def tool_input(arguments: str) -> JsonObject:
    """The `tool_use.input` object for a call's raw argument string.

    The API requires an object. When the model's own arguments were not a JSON object,
    the turn loop has already answered that call with a tool-error result; we send `{}` so
    the transcript stays sendable, and the error result that follows still tells the model
    what went wrong.
    """
    try:
        parsed: JsonValue = json.loads(arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _references(text: str, deferred: frozenset[str]) -> list[JsonValue] | None:
    """`tool_reference` blocks for a search result naming deferred tools (None: not one)."""
    if not deferred or not text.startswith("{"):
        return None
    try:
        found = json.loads(text).get("tools")
    except (ValueError, AttributeError):
        return None
    if not isinstance(found, list) or not found:
        return None
    names = [t.get("name") for t in found if isinstance(t, dict)]
    if len(names) != len(found) or not all(isinstance(n, str) and n in deferred for n in names):
        return None
    return [{"type": "tool_reference", "tool_name": n} for n in names]


def _blocks(message: Message, deferred: frozenset[str]) -> list[JsonObject]:
    text = message.wire_content
    if message.role == "tool":
        block: JsonObject = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
        references = _references(text, deferred)
        if references is not None:
            block["content"] = references
        elif text:
            block["content"] = text
        return [block]
    blocks: list[JsonObject] = [{"type": "text", "text": text}] if text else []
    if message.role == "assistant":
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(c.arguments)}
            for c in message.tool_calls
        )
    return blocks


def _wire_messages(messages: tuple[Message, ...], deferred: frozenset[str]) -> list[_WireMessage]:
    wire: list[_WireMessage] = []
    for index, message in enumerate(messages):
        # A mid-transcript system message has no place in the Messages API; it is sent as
        # user text, which keeps its words in front of the model.
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message, deferred)
        if not blocks:
            continue
        if wire and wire[-1].role == role:
            wire[-1].blocks.extend(blocks)
            wire[-1].last_index = index
        else:
            wire.append(_WireMessage(role=role, blocks=blocks, last_index=index))
    return wire


def _tool_choice(request: ModelRequest) -> JsonObject:
    choice = request.tool_choice
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if choice not in {t.name for t in request.tools}:
        names = ", ".join(repr(t.name) for t in request.tools) or "none"
        raise ModelRequestError(
            f"tool_choice {choice!r} names no tool in the request (tools: {names}); "
            "use 'auto', 'none', 'required' or one of the tool names"
        )
    return {"type": "tool", "name": choice}


def _tool(spec: ToolSpec) -> JsonObject:
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.parameters or {"type": "object"},
    }


def build_body(
    request: ModelRequest,
    *,
    model: str,
    cache_ttl: CacheTTL,
    default_max_tokens: int,
    stream: bool,
) -> tuple[JsonObject, tuple[CacheBreakpoint, ...]]:
    """The JSON body of `POST /v1/messages` and where its cache markers went."""
    marker: JsonObject = {"type": "ephemeral"} if cache_ttl == "5m" else {"type": "ephemeral", "ttl": "1h"}
    breakpoints: list[CacheBreakpoint] = []

    system: list[JsonValue] = []
    if request.system:
        cut = request.stable_prefix_chars
        if cut is not None and 0 < cut < len(request.system):
            system.append({"type": "text", "text": request.system[:cut], "cache_control": dict(marker)})
            breakpoints.append(CacheBreakpoint(at="system", system_chars=cut))
            system.append({"type": "text", "text": request.system[cut:], "cache_control": dict(marker)})
        else:
            system.append({"type": "text", "text": request.system, "cache_control": dict(marker)})
        breakpoints.append(CacheBreakpoint(at="system", system_chars=len(request.system)))

    wire = _wire_messages(request.messages, frozenset(t.name for t in request.deferred_tools))
    left = MAX_BREAKPOINTS - len(breakpoints)
    marked = wire[len(wire) - left :] if left > 0 else []
    for message in marked:
        message.blocks[-1]["cache_control"] = dict(marker)
        breakpoints.append(CacheBreakpoint(at="message", index=message.last_index))

    body: JsonObject = {
        "model": model,
        "max_tokens": request.max_tokens if request.max_tokens is not None else default_max_tokens,
    }
    if system:
        body["system"] = system
    messages: list[JsonValue] = [{"role": m.role, "content": list(m.blocks)} for m in wire]
    body["messages"] = messages
    if request.tools:
        tools: list[JsonValue] = [_tool(t) for t in request.tools]
        tools += [{**_tool(t), "defer_loading": True} for t in request.deferred_tools]
        body["tools"] = tools
        body["tool_choice"] = _tool_choice(request)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if stream:
        body["stream"] = True
    return body, tuple(breakpoints)


def parse_message(data: JsonObject, *, what: str, fallback_model: str) -> ModelReply:
    """A `ModelReply` from a non-streamed Messages-API JSON object."""
    content = data.get("content")
    if not isinstance(content, list):
        raise ModelResponseError(f"{what}: the reply has no content list: {json.dumps(data)[:200]!r}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for position, block in enumerate(content):
        if not isinstance(block, dict):
            raise ModelResponseError(f"{what}: content block #{position} is not an object: {block!r}")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
        elif kind == "tool_use":
            call_id, name, raw_input = block.get("id"), block.get("name"), block.get("input", {})
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise ModelResponseError(f"{what}: tool_use block #{position} lacks an id or a name")
            calls.append(ToolCall(id=call_id, name=name, arguments=json.dumps(raw_input, ensure_ascii=False)))
        # thinking / redacted_thinking / server-tool blocks carry nothing we replay
    usage = data.get("usage")
    stop = data.get("stop_reason")
    model = data.get("model")
    reply = ModelReply(
        message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls)),
        usage=normalize_anthropic_usage(usage if isinstance(usage, dict) else None),
        finish_reason=stop if isinstance(stop, str) else None,
        model=model if isinstance(model, str) else fallback_model,
    )
    return cap_reply(reply, finish_reason="max_tokens")
