"""Request traces: one JSON line per model request the harness sends.

A trace line is a `TraceRecord`. It holds everything needed to re-render the request to
tokens later — tools, the system prompt with its slot map, the messages exactly as sent,
the settings — plus the reply's normalized usage. Traces are the interface between the
turn loop and the cache meter: the meter reads ours or any OpenAI-style chat JSONL.

Writes are appended from a worker thread (one `write` + flush per batch of whole lines), so
a reader never sees half a line from us. A line written with `hold=True` (a turn request
whose reply calls tools: another request of the same turn follows) waits for the next
line or `flush`, so a turn costs one append; a crash loses at most the lines of the turn
being run.

A trace holds whole conversations, so it is owner-only like state.db: the file is created
with mode 0600 (an existing one readable by others is narrowed to that), and a trace
directory keel creates is 0700.
"""

from __future__ import annotations

import json
import operator
import os
import stat
import time
from collections.abc import Iterator, Sequence
from itertools import compress, count
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from harness.types import Message, ModelRequest, Purpose, ToolSpec, Usage
from harness.usage import usage_counts
from prompts.slots import SlotSpan

__all__ = [
    "TraceBreakpoint",
    "TraceMessage",
    "TraceParts",
    "TraceRecord",
    "TraceRefresh",
    "TraceSlot",
    "TraceTool",
    "TraceToolCall",
    "TraceUsage",
    "TraceWriter",
    "read_trace",
    "record_for_request",
    "trace_slots",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TraceSlot(_Model):
    """Where one system-prompt slot sits: character and token offsets into `system`."""

    name: str
    start: int
    end: int
    token_start: int | None = None
    token_end: int | None = None


class TraceTool(_Model):
    name: str
    description: str
    parameters: dict[str, JsonValue] = Field(default_factory=dict)


class TraceToolCall(_Model):
    id: str
    name: str
    arguments: str


class TraceMessage(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    """The bytes sent: `api_content` when the message carried one."""
    tool_calls: list[TraceToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class TraceUsage(_Model):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


class TraceRefresh(_Model):
    """Why a `keep_warm` request was sent: the wait it served and what it was expected to cost and save."""

    reason: Literal["tool_wait", "user_idle"]
    cost_usd: float
    saving_usd: float
    prefix_tokens: int


class TraceBreakpoint(_Model):
    """An Anthropic cache_control marker: after the tools, the system prompt, or a message."""

    at: Literal["tools", "system", "message"]
    index: int | None = None
    """Message index for `message` breakpoints."""
    system_chars: int | None = None
    """For `system` breakpoints: the marker sits after this many characters of `system`."""


class TraceRecord(_Model):
    v: Literal[1] = 1
    session_id: str
    turn: int
    purpose: Purpose
    model: str
    timestamp: float
    tools: list[TraceTool] = Field(default_factory=list)
    system: str
    slots: list[TraceSlot] = Field(default_factory=list)
    messages: list[TraceMessage] = Field(default_factory=list)
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    breakpoints: list[TraceBreakpoint] = Field(default_factory=list)
    cache_ttl: Literal["5m", "1h"] | None = None
    usage: TraceUsage | None = None
    latency_s: float | None = None
    error: str | None = None
    refresh: TraceRefresh | None = None
    """Set on `keep_warm` requests (`harness.lifecycle`)."""


def _message(m: Message) -> TraceMessage:
    return TraceMessage(
        role=m.role,
        content=m.wire_content,
        tool_calls=[TraceToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in m.tool_calls],
        tool_call_id=m.tool_call_id,
        name=m.name,
    )


class TraceParts:
    """The trace form of one conversation's tools and messages, kept from one request to the next.

    Each request repeats the one before it and adds a message or two, so converting and
    serializing only what changed keeps a trace line's cost from growing with the history.
    """

    _MARK = '"messages":[],"settings":'

    def __init__(self) -> None:
        self._sent: list[Message] = []
        self._traced: list[TraceMessage] = []
        self._json: list[str] = []
        """The JSON of the first `len(_json)` of `_traced` (the rest is serialized when needed)."""
        self._specs: Sequence[ToolSpec] = ()
        self._tools: list[TraceTool] = []

    def convert(self, messages: Sequence[Message]) -> list[TraceMessage]:
        """`messages` as a trace records them (the same records as `_message` builds)."""
        sent, limit = self._sent, min(len(messages), len(self._sent))
        # The first message that is not the very one sent before, found at C speed; from there
        # equal ones (a message given its store id since) are kept too.
        same = next(compress(count(), map(operator.is_not, messages[:limit], sent)), limit)
        while same < limit and messages[same] == sent[same]:
            same += 1
        traced = self._traced[:same] + [_message(m) for m in messages[same:]]
        del self._json[same:]
        self._sent, self._traced = list(messages), traced
        return traced

    def tools(self, specs: Sequence[ToolSpec]) -> list[TraceTool]:
        """`specs` as a trace records them (converted again only when they changed)."""
        if not (specs is self._specs or tuple(specs) == tuple(self._specs)):
            self._specs, self._tools = specs, [_tool(t) for t in specs]
        return self._tools

    def line(self, record: TraceRecord) -> str:
        """`record.model_dump_json()`, with the messages serialized once each when they are
        the ones `convert` returned last (any other record is serialized whole)."""
        kept = self._traced
        if len(record.messages) != len(kept) or not all(map(operator.is_, record.messages, kept)):
            return record.model_dump_json()
        # Everything after the messages is a fixed key or an escaped string, so the last
        # occurrence of the mark is the field itself.
        head = record.model_copy(update={"messages": []}).model_dump_json()
        at = head.rfind(self._MARK)
        self._json.extend(m.model_dump_json() for m in kept[len(self._json) :])
        body = ",".join(self._json)
        return f'{head[:at]}"messages":[{body}],"settings":{head[at + len(self._MARK) :]}'


def trace_slots(slots: Sequence[SlotSpan]) -> list[TraceSlot]:
    """A system prompt's slot map as the trace records it."""
    return [
        TraceSlot(name=s.name, start=s.start, end=s.end, token_start=s.token_start, token_end=s.token_end)
        for s in slots
    ]


def _tool(t: ToolSpec) -> TraceTool:
    return TraceTool(name=t.name, description=t.description, parameters=t.parameters)


def record_for_request(
    request: ModelRequest,
    *,
    session_id: str,
    turn: int,
    model: str,
    slots: Sequence[TraceSlot] = (),
    usage: Usage | None = None,
    latency_s: float | None = None,
    error: str | None = None,
    breakpoints: Sequence[TraceBreakpoint] = (),
    cache_ttl: Literal["5m", "1h"] | None = None,
    timestamp: float | None = None,
    refresh: TraceRefresh | None = None,
    kept: TraceParts | None = None,
) -> TraceRecord:
    """Build the trace line for a request that was just sent.

    `kept` holds the trace form of the tools and messages of this conversation's earlier
    requests (reused where this request repeats them).
    """
    settings: dict[str, JsonValue] = {"tool_choice": request.tool_choice}
    if request.max_tokens is not None:
        settings["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        settings["temperature"] = request.temperature
    # Built from typed parts only: `model_construct` skips re-validating every message each request.
    return TraceRecord.model_construct(
        session_id=session_id,
        turn=turn,
        purpose=request.purpose,
        model=model,
        timestamp=time.time() if timestamp is None else timestamp,
        tools=[_tool(t) for t in request.tools] if kept is None else kept.tools(request.tools),
        system=request.system,
        slots=list(slots),
        messages=[_message(m) for m in request.messages] if kept is None else kept.convert(request.messages),
        settings=settings,
        breakpoints=list(breakpoints),
        cache_ttl=cache_ttl,
        usage=None if usage is None else TraceUsage(**usage_counts(usage)),
        latency_s=latency_s,
        error=error,
        refresh=refresh,
    )


class TraceWriter:
    """Appends `TraceRecord`s to a JSONL file without blocking the event loop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = anyio.Lock()
        self._held: list[str] = []

    def _append(self, line: str) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
                os.fchmod(fd, 0o600)  # a trace written before traces were owner-only
            fh.write(line)
            fh.flush()

    async def write(self, record: TraceRecord, kept: TraceParts | None = None, *, hold: bool = False) -> None:
        """Append `record` as one line (`kept`: what built it, to serialize less); with
        `hold`, keep the line for the next write or `flush` instead."""
        self._held.append((record.model_dump_json() if kept is None else kept.line(record)) + "\n")
        if not hold:
            await self.flush()

    async def flush(self) -> None:
        """Append the lines held so far (nothing to do when none are)."""
        async with self._lock:
            lines, self._held = "".join(self._held), []
            if lines:
                await anyio.to_thread.run_sync(self._append, lines)


def read_trace(path: Path) -> Iterator[TraceRecord]:
    """Yield the records of one of our traces (a blocking generator; run it in a thread).

    Raises:
        ValueError: a line is not a valid trace record; the message names the line number.
    """
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield TraceRecord.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValueError) as exc:
                raise ValueError(f"{path}:{lineno}: not a keel trace record: {exc}") from exc
