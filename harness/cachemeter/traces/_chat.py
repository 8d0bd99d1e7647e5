"""OpenAI-style and Anthropic-style chat request lines → `MeterRequest`s.

A chat line is `{"model": ..., "messages": [...], "tools": [...]}`, with an optional
`timestamp` (epoch seconds or ISO 8601), `usage` (OpenAI or Anthropic shape), `purpose`
(default `turn`) and `session_id`. OpenAI shapes (string or list-of-parts content,
`tool_calls`, `tool` results) and Anthropic request bodies (top-level `system`, content
blocks, `tool_use`, `cache_control` markers, which become breakpoints; the request's TTL is
the longest any marker asks for) are both understood. Leading system/developer messages are
lifted into the system prompt (`MeterRequest.message_base` counts them); when there are
several, each is kept as sent (`MeterRequest.system_messages`) so renderers do not merge
them. Unknown keys are ignored: foreign request bodies carry many API options the meter has
no use for.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from harness.cachemeter._request import (
    MeterBreakpoint,
    MeterMessage,
    MeterRequest,
    MeterTool,
    MeterToolCall,
)
from harness.errors import validation_problems
from harness.types import JsonObject, Purpose
from harness.usage import normalize_usage

__all__ = ["content_text", "dumps", "request_from_chat", "scalar", "timestamp_of"]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}


class _Loose(BaseModel):
    # Foreign request bodies carry many API options (temperature, stream, metadata...).
    model_config = ConfigDict(extra="ignore", frozen=True)


class _ChatMessage(_Loose):
    role: str
    content: str | list[JsonValue] | None = None
    tool_calls: list[dict[str, JsonValue]] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class _ChatLine(_Loose):
    messages: list[_ChatMessage]
    model: str = "unknown"
    tools: list[dict[str, JsonValue]] | None = None
    system: str | list[JsonValue] | None = None
    timestamp: float | str | None = None
    usage: dict[str, JsonValue] | None = None
    purpose: Purpose = "turn"
    session_id: str | None = None


def dumps(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _has_marker(block: JsonValue) -> tuple[bool, Literal["5m", "1h"] | None]:
    if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
        control = block["cache_control"]
        assert isinstance(control, dict)
        ttl = control.get("ttl")
        return True, "1h" if ttl == "1h" else "5m"
    return False, None


def content_text(content: str | list[JsonValue] | None) -> tuple[str, list[MeterToolCall], bool]:
    """Flatten message content; collect Anthropic tool_use blocks; report a cache marker."""
    if content is None:
        return "", [], False
    if isinstance(content, str):
        return content, [], False
    parts: list[str] = []
    calls: list[MeterToolCall] = []
    marked = False
    for block in content:
        marked = _has_marker(block)[0] or marked
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            text = block["text"]
            assert isinstance(text, str)
            parts.append(text)
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            calls.append(
                MeterToolCall(str(block.get("id", "")), str(block.get("name", "")), dumps(block.get("input")))
            )
        else:
            # Images, tool results and other parts: their canonical JSON, so a change is seen.
            shown = (
                {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
            )
            parts.append(dumps(shown))
    return "\n".join(parts), calls, marked


def _tool_call(raw: dict[str, JsonValue]) -> MeterToolCall:
    fn = raw.get("function")
    source = fn if isinstance(fn, dict) else raw
    args = source.get("arguments", "")
    name = source.get("name", "")
    return MeterToolCall(str(raw.get("id", "")), str(name), args if isinstance(args, str) else dumps(args))


def _tool(raw: dict[str, JsonValue]) -> MeterTool:
    fn = raw.get("function")
    source = fn if isinstance(fn, dict) else raw
    params = source.get("parameters", source.get("input_schema", {}))
    if "name" not in source:
        raise ValueError(f"tools: a tool has no 'name' ({dumps(raw)[:80]!r})")
    return MeterTool(
        str(source.get("name")),
        str(source.get("description", "")),
        params if isinstance(params, dict) else {"value": params},
    )


def scalar(value: JsonValue) -> float | str | None:
    """A JSON value that can be a timestamp (a number or a string), else None."""
    return value if isinstance(value, float | int | str) and not isinstance(value, bool) else None


def timestamp_of(value: float | str | None) -> float | None:
    if value is None or isinstance(value, float | int):
        return value
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError as exc:
        raise ValueError(f"timestamp {value!r} is neither epoch seconds nor ISO 8601") from exc


def request_from_chat(obj: JsonObject, *, line: int = 0) -> MeterRequest:
    """Normalize one OpenAI-style (or Anthropic-style) chat request object.

    Raises:
        ValueError: the object is not a chat request; the message says which field is wrong.
    """
    try:
        chat = _ChatLine.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(validation_problems(exc, whole="(line)", most=3)) from exc
    breakpoints: list[MeterBreakpoint] = []
    ttls: set[str | None] = set()

    tools = tuple(_tool(t) for t in chat.tools or ())
    for t in chat.tools or ():
        marked, t_ttl = _has_marker(t)
        if marked:
            breakpoints.append(MeterBreakpoint("tools"))
            ttls.add(t_ttl)

    system_parts: list[str] = []
    chars = 0
    if isinstance(chat.system, str):
        system_parts.append(chat.system)
    elif isinstance(chat.system, list):
        for block in chat.system:
            text, _, marked = content_text([block])
            if system_parts:
                chars += 2  # the "\n\n" joining blocks
            system_parts.append(text)
            chars += len(text)
            if marked:
                breakpoints.append(MeterBreakpoint("system", system_chars=chars))
                ttls.add(_has_marker(block)[1])

    # The top-level system prompt (Anthropic) is one system message however many blocks it has.
    system_messages = ["\n\n".join(system_parts)] if system_parts else []
    messages: list[MeterMessage] = []
    lifted = 0
    for i, m in enumerate(chat.messages):
        role = _ROLES.get(m.role)
        if role is None:
            raise ValueError(f"messages.{i}.role: {m.role!r} is not a chat role; use {', '.join(_ROLES)}")
        text, calls, marked = content_text(m.content)
        if role == "system" and not messages:
            system_parts.append(text)
            system_messages.append(text)
            lifted += 1
            continue
        calls.extend(_tool_call(c) for c in m.tool_calls or ())
        messages.append(MeterMessage(role, text, tuple(calls), m.tool_call_id, m.name))
        if marked:
            breakpoints.append(MeterBreakpoint("message", index=len(messages) - 1))
            ttls.update(_has_marker(b)[1] for b in m.content or () if isinstance(b, dict))
    # One TTL per request in the simulation: the longest one any marker asked for.
    ttl: Literal["5m", "1h"] | None = "1h" if "1h" in ttls else "5m" if "5m" in ttls else None
    return MeterRequest(
        kind="chat",
        model=chat.model,
        system="\n\n".join(system_parts),
        system_messages=tuple(system_messages) if len(system_messages) > 1 else (),
        messages=tuple(messages),
        tools=tools,
        timestamp=timestamp_of(chat.timestamp),
        session_id=chat.session_id,
        purpose=chat.purpose,
        line=line,
        message_base=lifted,
        breakpoints=tuple(breakpoints),
        cache_ttl=ttl,
        usage=normalize_usage(chat.usage),
    )
