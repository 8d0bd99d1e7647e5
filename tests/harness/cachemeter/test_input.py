"""Trace input: keel traces round-trip, chat JSONL (OpenAI and Anthropic shapes), clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cachemeter import (
    CanonicalRenderer,
    MeterBreakpoint,
    MeterInputError,
    ReportedUsage,
    detect_format,
    read_requests,
    request_from_record,
)
from harness.tokens import CharTokenizer
from harness.trace import TraceBreakpoint, TraceRecord, TraceSlot, TraceWriter, record_for_request
from harness.types import Message, ModelRequest, ToolCall, ToolSpec, Usage


def _records() -> list[TraceRecord]:
    system = "You are keel.\nMEMORY\nuser likes tea"
    slots = [TraceSlot(name="identity", start=0, end=14), TraceSlot(name="memory", start=14, end=len(system))]
    tools = (ToolSpec("memory", "save a fact", {"type": "object", "properties": {"x": {"type": "string"}}}),)
    call = ToolCall("c1", "memory", '{"x": "tea"}')
    history = (
        Message("user", "hello", api_content="hello\n<memory-context>tea</memory-context>"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "saved", tool_call_id="c1", name="memory"),
    )
    out = []
    for k in range(1, 4):
        req = ModelRequest(
            system=system, messages=history[:k], tools=tools, purpose="turn" if k < 3 else "flush"
        )
        out.append(
            record_for_request(
                req,
                session_id="s1",
                turn=k,
                model="claude-sonnet-4-5",
                slots=slots,
                usage=Usage(input=5, output=7, cache_read=100, cache_write=3),
                breakpoints=[
                    TraceBreakpoint(at="system", system_chars=14),
                    TraceBreakpoint(at="message", index=k - 1),
                ],
                cache_ttl="1h",
                timestamp=1000.0 + k,
            )
        )
    return out


async def test_keel_trace_round_trips_through_the_writer_with_identical_renders(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    writer = TraceWriter(path)
    records = _records()
    for record in records:
        await writer.write(record)
    assert detect_format(path) == "keel"
    read = list(read_requests(path))
    renderer = CanonicalRenderer(CharTokenizer())
    assert [r.line for r in read] == [1, 2, 3]
    for record, request in zip(records, read, strict=True):
        direct = request_from_record(record, line=request.line)
        assert request == direct
        assert renderer.render(request) == renderer.render(direct)
    last = read[-1]
    assert last.purpose == "flush"
    assert last.cache_ttl == "1h"
    assert last.messages[0].content.endswith("</memory-context>")  # the bytes sent, not the canonical text
    assert last.messages[1].tool_calls[0].arguments == '{"x": "tea"}'
    assert last.breakpoints == (MeterBreakpoint("system", None, 14), MeterBreakpoint("message", 2, None))
    assert last.usage == ReportedUsage(input=5, cache_read=100, cache_write=3, output=7)


def _write_lines(path: Path, *objs: object) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def test_openai_chat_jsonl_is_normalized(tmp_path: Path) -> None:
    line = {
        "model": "gpt-4o",
        "timestamp": "2026-01-02T03:04:05+00:00",
        "temperature": 0.2,
        "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "x"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "1", "content": "result"},
        ],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 64},
        },
    }
    path = _write_lines(tmp_path / "chat.jsonl", line, {"messages": [{"role": "user", "content": "hi"}]})
    assert detect_format(path) == "chat"
    first, second = read_requests(path)
    assert first.kind == "chat"
    assert first.model == "gpt-4o"
    assert first.system == "be brief"
    assert first.message_base == 1
    assert [m.role for m in first.messages] == ["user", "assistant", "tool"]
    assert first.messages[0].content.startswith("look\n")
    assert "image_url" in first.messages[0].content
    assert first.messages[1].tool_calls[0].name == "f"
    assert first.messages[2].tool_call_id == "1"
    assert first.tools[0].name == "f"
    assert first.timestamp == 1767323045.0
    assert first.usage == ReportedUsage(input=36, cache_read=64, output=9)
    assert (second.model, second.timestamp, second.usage) == ("unknown", None, None)


def test_anthropic_request_bodies_bring_their_cache_control_breakpoints(tmp_path: Path) -> None:
    line = {
        "model": "claude-sonnet-4-5",
        "tools": [
            {
                "name": "t",
                "description": "d",
                "input_schema": {"type": "object"},
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "system": [
            {"type": "text", "text": "stable part", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {"type": "text", "text": "volatile part"},
        ],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "u1", "name": "t", "input": {"a": 1}}],
            },
        ],
    }
    (request,) = read_requests(_write_lines(tmp_path / "a.jsonl", line))
    assert request.system == "stable part\n\nvolatile part"
    assert request.breakpoints == (
        MeterBreakpoint("tools"),
        MeterBreakpoint("system", system_chars=len("stable part")),
        MeterBreakpoint("message", index=0),
    )
    assert request.cache_ttl == "1h"
    assert request.messages[1].tool_calls[0].arguments == '{"a":1}'
    assert request.tools[0].parameters == {"type": "object"}


def test_a_garbage_line_is_reported_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"messages": []}\n\n{not json\n', encoding="utf-8")
    with pytest.raises(MeterInputError, match=r"bad\.jsonl:3: not valid JSON"):
        list(read_requests(path))


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ("[1, 2]", r":2: expected a JSON object, got list"),
        (
            '{"messages": [{"role": "wizard", "content": "x"}]}',
            r":2: not a chat request: .*'wizard' is not a chat role",
        ),
        ('{"model": "m"}', r":2: not a chat request: messages"),
        ('{"messages": [{"content": "x"}]}', r":2: not a chat request: messages\.0\.role"),
    ],
)
def test_bad_chat_lines_name_the_line_and_the_problem(tmp_path: Path, second: str, message: str) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "ok"}]}\n' + second + "\n", encoding="utf-8")
    with pytest.raises(MeterInputError, match=message):
        list(read_requests(path))


def test_a_broken_keel_record_names_its_line(tmp_path: Path) -> None:
    good = _records()[0].model_dump_json()
    path = tmp_path / "t.jsonl"
    path.write_text(good + "\n" + good.replace('"turn":1', '"turn":"one"') + "\n", encoding="utf-8")
    with pytest.raises(MeterInputError, match=r"t\.jsonl:2: not a keel trace record: turn"):
        list(read_requests(path))


def test_a_first_line_of_neither_format_is_refused(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "x.jsonl", {"prompt": "hi"})
    with pytest.raises(MeterInputError, match=r"x\.jsonl:1: neither a keel trace record nor a chat request"):
        list(read_requests(path))


def test_a_missing_trace_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(MeterInputError, match="does not exist"):
        list(read_requests(tmp_path / "nope.jsonl"))


def test_an_empty_file_has_no_requests(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert detect_format(path) is None
    assert list(read_requests(path)) == []
