"""Trace readers: keel JSONL traces and OpenAI-style chat JSONL, into `MeterRequest`s.

The format is detected per file from its first non-blank line: a keel trace record has
`session_id`, `purpose` and `system`; anything else with a `messages` list is a chat line
(`{"model": ..., "messages": [...], "tools": [...]}`, optional `timestamp` as epoch seconds
or ISO 8601, optional `usage` in OpenAI or Anthropic shape, optional `purpose` (default
`turn`) and `session_id`). Chat lines accept OpenAI shapes (string or list-of-parts content,
`tool_calls`, `tool` results) and Anthropic request bodies (top-level `system`, content
blocks, `tool_use`, `cache_control` markers, which become breakpoints; the request's TTL is
the longest any marker asks for). Leading system/developer messages are lifted into the
system prompt (`MeterRequest.message_base` counts them); when there are several, each is
kept as sent (`MeterRequest.system_messages`) so renderers do not merge them. Unknown keys
are ignored: foreign request bodies carry many API options the meter has no use for.

A line that is not a request raises `MeterInputError` naming the file, the line number and
what is wrong; nothing is skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from harness.cachemeter._errors import MeterInputError
from harness.cachemeter._request import (
    MeterBreakpoint,
    MeterMessage,
    MeterRequest,
    MeterSlot,
    MeterTool,
    MeterToolCall,
    ReportedUsage,
)
from harness.trace import TraceRecord
from harness.types import JsonObject, Purpose

__all__ = [
    "TraceFormat",
    "detect_format",
    "read_requests",
    "request_from_chat",
    "request_from_record",
    "requests_from_records",
]

TraceFormat: TypeAlias = Literal["keel", "chat"]
Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}


def request_from_record(record: TraceRecord, *, line: int = 0) -> MeterRequest:
    """Normalize one keel trace record."""
    usage = record.usage
    return MeterRequest(
        kind="keel",
        model=record.model,
        system=record.system,
        messages=tuple(
            MeterMessage(
                role=m.role,
                content=m.content,
                tool_calls=tuple(MeterToolCall(c.id, c.name, c.arguments) for c in m.tool_calls),
                tool_call_id=m.tool_call_id,
                name=m.name,
            )
            for m in record.messages
        ),
        tools=tuple(MeterTool(t.name, t.description, dict(t.parameters)) for t in record.tools),
        slots=tuple(MeterSlot(s.name, s.start, s.end) for s in record.slots),
        timestamp=record.timestamp,
        session_id=record.session_id,
        turn=record.turn,
        purpose=record.purpose,
        line=line,
        breakpoints=tuple(MeterBreakpoint(b.at, b.index, b.system_chars) for b in record.breakpoints),
        cache_ttl=record.cache_ttl,
        usage=None
        if usage is None
        else ReportedUsage(
            input=usage.input, cache_read=usage.cache_read, cache_write=usage.cache_write, output=usage.output
        ),
    )


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


def _dumps(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _has_marker(block: JsonValue) -> tuple[bool, Literal["5m", "1h"] | None]:
    if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
        control = block["cache_control"]
        assert isinstance(control, dict)
        ttl = control.get("ttl")
        return True, "1h" if ttl == "1h" else "5m"
    return False, None


def _content_text(content: str | list[JsonValue] | None) -> tuple[str, list[MeterToolCall], bool]:
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
                MeterToolCall(
                    str(block.get("id", "")), str(block.get("name", "")), _dumps(block.get("input"))
                )
            )
        else:
            # Images, tool results and other parts: their canonical JSON, so a change is seen.
            shown = (
                {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
            )
            parts.append(_dumps(shown))
    return "\n".join(parts), calls, marked


def _tool_call(raw: dict[str, JsonValue]) -> MeterToolCall:
    fn = raw.get("function")
    source = fn if isinstance(fn, dict) else raw
    args = source.get("arguments", "")
    name = source.get("name", "")
    return MeterToolCall(str(raw.get("id", "")), str(name), args if isinstance(args, str) else _dumps(args))


def _tool(raw: dict[str, JsonValue]) -> MeterTool:
    fn = raw.get("function")
    source = fn if isinstance(fn, dict) else raw
    params = source.get("parameters", source.get("input_schema", {}))
    if "name" not in source:
        raise ValueError(f"tools: a tool has no 'name' ({_dumps(raw)[:80]!r})")
    return MeterTool(
        str(source.get("name")),
        str(source.get("description", "")),
        params if isinstance(params, dict) else {"value": params},
    )


def _timestamp(value: float | str | None) -> float | None:
    if value is None or isinstance(value, float | int):
        return value
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError as exc:
        raise ValueError(f"timestamp {value!r} is neither epoch seconds nor ISO 8601") from exc


def _int(obj: JsonObject, key: str) -> int:
    value = obj.get(key)
    return value if isinstance(value, int) else 0


def _usage(raw: dict[str, JsonValue] | None) -> ReportedUsage | None:
    if not raw:
        return None
    if "prompt_tokens" in raw:  # OpenAI: cached tokens are included in prompt_tokens
        details = raw.get("prompt_tokens_details")
        cached = _int(details, "cached_tokens") if isinstance(details, dict) else 0
        return ReportedUsage(
            input=_int(raw, "prompt_tokens") - cached,
            cache_read=cached,
            output=_int(raw, "completion_tokens"),
        )
    if "input_tokens" in raw:  # Anthropic: exclusive counts
        return ReportedUsage(
            input=_int(raw, "input_tokens"),
            cache_read=_int(raw, "cache_read_input_tokens"),
            cache_write=_int(raw, "cache_creation_input_tokens"),
            output=_int(raw, "output_tokens"),
        )
    return ReportedUsage(
        input=_int(raw, "input"),
        cache_read=_int(raw, "cache_read"),
        cache_write=_int(raw, "cache_write"),
        output=_int(raw, "output"),
    )


def request_from_chat(obj: JsonObject, *, line: int = 0) -> MeterRequest:
    """Normalize one OpenAI-style (or Anthropic-style) chat request object.

    Raises:
        ValueError: the object is not a chat request; the message says which field is wrong.
    """
    try:
        chat = _ChatLine.model_validate(obj)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(line)'}: {err['msg']}" for err in exc.errors()[:3]
        )
        raise ValueError(problems) from exc
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
            text, _, marked = _content_text([block])
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
        text, calls, marked = _content_text(m.content)
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
        timestamp=_timestamp(chat.timestamp),
        session_id=chat.session_id,
        purpose=chat.purpose,
        line=line,
        message_base=lifted,
        breakpoints=tuple(breakpoints),
        cache_ttl=ttl,
        usage=_usage(chat.usage),
    )


def _is_keel(obj: JsonObject) -> bool:
    return "session_id" in obj and "purpose" in obj and "system" in obj and "turn" in obj


def _lines(path: Path) -> Iterator[tuple[int, JsonObject]]:
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise MeterInputError(f"trace file {str(path)!r} does not exist; check the path") from exc
    except OSError as exc:
        raise MeterInputError(f"trace file {str(path)!r} cannot be read: {exc}") from exc
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
            except UnicodeDecodeError as exc:
                raise MeterInputError(
                    f"{where}: not UTF-8 text ({exc.reason}); save the trace as UTF-8"
                ) from exc
            except json.JSONDecodeError as exc:
                raise MeterInputError(
                    f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "every line must hold one JSON request object"
                ) from exc
            if not isinstance(obj, dict):
                raise MeterInputError(
                    f"{where}: expected a JSON object, got {type(obj).__name__}; "
                    "every line must hold one request object"
                )
            yield lineno, obj


def detect_format(path: Path) -> TraceFormat | None:
    """The format of a trace file from its first non-blank line (None for an empty file)."""
    for lineno, obj in _lines(path):
        if _is_keel(obj):
            return "keel"
        if "messages" in obj:
            return "chat"
        raise MeterInputError(
            f"{path}:{lineno}: neither a keel trace record nor a chat request "
            f"(keys {sorted(obj)[:6]!r}); chat lines need a 'messages' list"
        )
    return None


def read_requests(path: Path) -> Iterator[MeterRequest]:
    """Yield the requests of a trace file in order (a blocking generator).

    Raises:
        MeterInputError: the file is missing, or a line is not a request of the file's
            format; the message names the line.
    """
    fmt = detect_format(path)
    for lineno, obj in _lines(path):
        where = f"{path}:{lineno}"
        if fmt == "keel":
            try:
                record = TraceRecord.model_validate(obj)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(line)'}: {e['msg']}" for e in exc.errors()[:3]
                )
                raise MeterInputError(f"{where}: not a keel trace record: {problems}") from exc
            yield request_from_record(record, line=lineno)
        else:
            try:
                yield request_from_chat(obj, line=lineno)
            except ValueError as exc:
                raise MeterInputError(f"{where}: not a chat request: {exc}") from exc


def requests_from_records(records: Iterable[TraceRecord]) -> Iterator[MeterRequest]:
    """Normalize in-memory trace records (what an experiment runner holds)."""
    for i, record in enumerate(records, 1):
        yield request_from_record(record, line=i)
