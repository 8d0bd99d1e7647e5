"""keel traces: records round-trip through the trace writer; a broken record names its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cachemeter import (
    CanonicalRenderer,
    MeterBreakpoint,
    MeterInputError,
    ReportedUsage,
    read_requests,
    request_from_record,
)
from harness.cachemeter.traces._read import detect_format
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


def test_a_broken_keel_record_names_its_line(tmp_path: Path) -> None:
    good = _records()[0].model_dump_json()
    path = tmp_path / "t.jsonl"
    path.write_text(good + "\n" + good.replace('"turn":1', '"turn":"one"') + "\n", encoding="utf-8")
    with pytest.raises(MeterInputError, match=r"t\.jsonl:2: not a keel trace record: turn"):
        list(read_requests(path))


def test_a_live_request_reads_as_its_trace_line_would() -> None:
    # Telemetry meters live requests without writing the trace line; what it feeds the meter
    # must be exactly what `keel cache report` reads back from that line.
    from harness.cachemeter import MeterRequest
    from harness.cachemeter.traces import MessageMemo, request_from_model
    from prompts.slots import SlotSpan

    call = ToolCall("c1", "memory", '{"x": "tea"}')
    messages = (
        Message("user", "hello", api_content="hello\n<memory-context>tea</memory-context>"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", '{"ok": true}', tool_call_id="c1", name="memory"),
        Message("assistant", "Saved."),
    )
    tools = (ToolSpec("memory", "save a fact", {"type": "object", "properties": {"x": {"type": "string"}}}),)
    request = ModelRequest(system="You are keel.\nMEMORY", messages=messages, tools=tools, purpose="flush")
    slots = [SlotSpan(name="identity", start=0, end=14), SlotSpan(name="memory", start=14, end=20)]
    usage = Usage(input=7, output=3, cache_read=5, cache_write=2)
    breakpoints = [TraceBreakpoint(at="message", index=2)]
    memo = MessageMemo()

    def live() -> MeterRequest:
        return request_from_model(
            request,
            memo=memo,
            session_id="s1",
            model="m",
            slots=slots,
            usage=usage,
            breakpoints=breakpoints,
            cache_ttl="1h",
            timestamp=12.5,
            line=4,
        )

    record = record_for_request(
        request,
        session_id="s1",
        turn=0,
        model="m",
        slots=[TraceSlot(name=s.name, start=s.start, end=s.end) for s in slots],
        usage=usage,
        breakpoints=breakpoints,
        cache_ttl="1h",
        timestamp=12.5,
    )
    first, again = live(), live()
    assert first == request_from_record(record, line=4)
    assert all(a is b for a, b in zip(again.messages, first.messages, strict=True))  # converted once
