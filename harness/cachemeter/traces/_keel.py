"""keel's requests → `MeterRequest`s: trace records (`harness.trace.TraceRecord`), and the
requests of a live session (`request_from_model`, for telemetry's per-request verdicts).

`request_from_model(request, ...)` equals `request_from_record(record_for_request(request,
...))` (a test holds them equal) without building the trace line: a live stream's requests
repeat their history, and a `MessageMemo` converts each message once — and a message list
that extends one it converted recently costs only its new messages (the shared part is found
by one tuple comparison, in C, of the same message objects) — so the cost of a request does
not grow with its history.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

from harness.cachemeter._request import (
    MeterBreakpoint,
    MeterMessage,
    MeterRequest,
    MeterSlot,
    MeterTool,
    MeterToolCall,
)
from harness.cachemeter.render import LruMemo
from harness.trace import TraceBreakpoint, TraceRecord
from harness.types import Message, ModelRequest, Usage
from harness.usage import usage_from_counts
from prompts.slots import SlotSpan

__all__ = ["MessageMemo", "request_from_model", "request_from_record", "requests_from_records"]


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


class MessageMemo:
    """keel messages converted once each (bounded, least recently used dropped first).

    `convert_all` also keeps the last `recent` lists it converted: a list that starts with one
    of them (a stream's next request: the same history, then its new messages) converts only
    the messages after it.
    """

    def __init__(self, *, max_entries: int = 50_000, recent: int = 4) -> None:
        self.convert = LruMemo(_meter_message, max_entries=max_entries)
        self._recent: deque[tuple[tuple[Message, ...], tuple[MeterMessage, ...]]] = deque(maxlen=recent)

    def convert_all(self, messages: Sequence[Message]) -> tuple[MeterMessage, ...]:
        """Every message of `messages` converted, in order."""
        given = tuple(messages)
        for seen, converted in self._recent:
            if seen and len(seen) <= len(given) and given[: len(seen)] == seen:
                if len(seen) == len(given):
                    return converted
                break
        else:
            converted = ()
        out = converted + tuple(self.convert(m) for m in given[len(converted) :])
        self._recent.appendleft((given, out))
        return out


def _meter_message(m: Message) -> MeterMessage:
    return MeterMessage(
        role=m.role,
        content=m.wire_content,
        tool_calls=tuple(MeterToolCall(c.id, c.name, c.arguments) for c in m.tool_calls),
        tool_call_id=m.tool_call_id,
        name=m.name,
    )


def request_from_model(
    request: ModelRequest,
    *,
    memo: MessageMemo,
    session_id: str,
    model: str,
    slots: Sequence[SlotSpan] = (),
    usage: Usage | None = None,
    breakpoints: Sequence[TraceBreakpoint] = (),
    cache_ttl: Literal["5m", "1h"] | None = None,
    timestamp: float,
    line: int = 0,
) -> MeterRequest:
    """A live request as the meter reads it: `request_from_record(record_for_request(...))`."""
    return MeterRequest(
        kind="keel",
        model=model,
        system=request.system,
        messages=memo.convert_all(request.messages),
        tools=request.tools,  # `MeterTool` is `ToolSpec`
        slots=tuple(MeterSlot(s.name, s.start, s.end) for s in slots),
        timestamp=timestamp,
        session_id=session_id,
        turn=0,
        purpose=request.purpose,
        line=line,
        breakpoints=tuple(MeterBreakpoint(b.at, b.index, b.system_chars) for b in breakpoints),
        cache_ttl=cache_ttl,
        usage=usage,
    )
