"""keel trace records (`harness.trace.TraceRecord`) → `MeterRequest`s."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from harness.cachemeter._request import (
    MeterBreakpoint,
    MeterMessage,
    MeterRequest,
    MeterSlot,
    MeterTool,
    MeterToolCall,
)
from harness.trace import TraceRecord
from harness.usage import usage_from_counts

__all__ = ["request_from_record", "requests_from_records"]


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
        usage=None if usage is None else usage_from_counts(usage.model_dump()),
    )


def requests_from_records(records: Iterable[TraceRecord]) -> Iterator[MeterRequest]:
    """Normalize in-memory trace records (what an experiment runner holds)."""
    for i, record in enumerate(records, 1):
        yield request_from_record(record, line=i)
