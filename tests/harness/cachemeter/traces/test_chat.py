"""Chat JSONL: OpenAI shapes and Anthropic request bodies (with their cache_control breakpoints)."""

from __future__ import annotations

from pathlib import Path

from harness.cachemeter import MeterBreakpoint, ReportedUsage, read_requests
from harness.cachemeter.traces._read import detect_format
from tests.harness.cachemeter.traces.tracekit import write_lines


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
    path = write_lines(tmp_path / "chat.jsonl", line, {"messages": [{"role": "user", "content": "hi"}]})
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
    (request,) = read_requests(write_lines(tmp_path / "a.jsonl", line))
    assert request.system == "stable part\n\nvolatile part"
    assert request.breakpoints == (
        MeterBreakpoint("tools"),
        MeterBreakpoint("system", system_chars=len("stable part")),
        MeterBreakpoint("message", index=0),
    )
    assert request.cache_ttl == "1h"
    assert request.messages[1].tool_calls[0].arguments == '{"a":1}'
    assert request.tools[0].parameters == {"type": "object"}
