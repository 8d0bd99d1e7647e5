"""The telemetry port: what the turn loop, the compressor and the tools tell telemetry.

The loop never imports OpenTelemetry. It holds a `Telemetry` — `NO_TELEMETRY` when export is
off (every call returns the same stateless do-nothing context manager, so the hot path pays a
method call and nothing else), or the OpenTelemetry implementation in `_otel.py`, built by
`open_telemetry` only when the config or the environment names an endpoint.

Each operation is a context manager around the work it describes; its handle takes what is
learnt while the work runs (the first streamed chunk, the reply, a tool result, a memory
write's outcome). An exception leaving the block marks the span as failed. Spans nest by the
current context: a request inside a turn, a tool call inside the turn that asked for it, the
flush and summary requests inside the compression that sent them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from harness.telemetry.names import CompressionStep, MemoryOperation
from harness.types import ModelReply, ModelRequest, ToolCall, Usage
from prompts.slots import SlotSpan

__all__ = [
    "NO_TELEMETRY",
    "CompressionSpan",
    "MemoryOutcome",
    "MemorySpan",
    "NoTelemetry",
    "RequestInfo",
    "RequestSpan",
    "Telemetry",
    "ToolSpan",
    "TurnSpan",
]

MemoryOutcome: TypeAlias = Literal["saved", "refused", "held"]


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """Who sends a model request and in which conversation: the attributes of its span."""

    model: str
    provider: str
    conversation_id: str
    session_id: str
    compacted: bool
    """The conversation goes on in a child session after a compression."""
    stream: str = ""
    """The sequence of requests its cache reuse is measured against (one per session
    object, like its JSONL trace)."""


class TurnSpan(Protocol):
    def ended(self, *, stop_reason: str, iterations: int) -> None:
        """The turn ended normally (`final`, `max_iterations`)."""
        ...


class RequestSpan(Protocol):
    def first_chunk(self) -> None:
        """The first streamed event of the reply arrived (time to first chunk)."""
        ...

    def replied(
        self, reply: ModelReply, usage: Usage, *, reported: bool, slots: tuple[SlotSpan, ...]
    ) -> None:
        """The reply, its usage (`reported` False: keel's estimate) and the system prompt's slot
        map when the request carried the session's prefix (for the cache attribution)."""
        ...


class ToolSpan(Protocol):
    def result(self, content: str, *, is_error: bool) -> None: ...


class MemorySpan(Protocol):
    def found(self, count: int) -> None:
        """A search returned `count` records."""
        ...

    def outcome(self, outcome: MemoryOutcome, *, reason: str | None = None) -> None:
        """A write was saved, refused (`reason`: the store's refusal) or held for confirmation."""
        ...


class CompressionSpan(Protocol):
    def finished(self, *, outcome: str, tokens_before: int, tokens_after: int) -> None:
        """`outcome`: compressed, skipped, aborted, unchanged."""
        ...


class Telemetry(Protocol):
    """Where the session reports what it does (see the module docstring)."""

    @property
    def enabled(self) -> bool: ...

    def turn(
        self, *, conversation_id: str, session_id: str, turn: int
    ) -> AbstractContextManager[TurnSpan]: ...

    def request(self, request: ModelRequest, info: RequestInfo) -> AbstractContextManager[RequestSpan]:
        """One model request, sent as `info` says."""
        ...

    def tool(self, call: ToolCall, *, mcp: bool = False) -> AbstractContextManager[ToolSpan]: ...

    def memory(
        self, operation: MemoryOperation, *, store: str, query: str | None = None
    ) -> AbstractContextManager[MemorySpan]: ...

    def compression(self, *, manual: bool) -> AbstractContextManager[CompressionSpan]: ...

    def step(self, step: CompressionStep, *, piece: int | None = None) -> AbstractContextManager[object]:
        """One step of a compression (a flush piece, the summary, reload, rebuild)."""
        ...

    async def flush(self, *, closing: str | None = None) -> None:
        """Export what has ended so far; `closing`: the stream of a session that closed (what
        was kept to measure its cache reuse is dropped)."""
        ...


class _Nothing:
    """Every handle and context manager of `NoTelemetry`: one stateless object, reused."""

    __slots__ = ()

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def ended(self, *, stop_reason: str, iterations: int) -> None:
        return None

    def first_chunk(self) -> None:
        return None

    def replied(
        self, reply: ModelReply, usage: Usage, *, reported: bool, slots: tuple[SlotSpan, ...]
    ) -> None:
        return None

    def result(self, content: str, *, is_error: bool) -> None:
        return None

    def found(self, count: int) -> None:
        return None

    def outcome(self, outcome: MemoryOutcome, *, reason: str | None = None) -> None:
        return None

    def finished(self, *, outcome: str, tokens_before: int, tokens_after: int) -> None:
        return None


_NOTHING = _Nothing()


class NoTelemetry:
    """Export off: nothing is recorded, nothing is imported, nothing is allocated per call."""

    enabled = False

    def turn(self, *, conversation_id: str, session_id: str, turn: int) -> _Nothing:
        return _NOTHING

    def request(self, request: ModelRequest, info: RequestInfo) -> _Nothing:
        return _NOTHING

    def tool(self, call: ToolCall, *, mcp: bool = False) -> _Nothing:
        return _NOTHING

    def memory(self, operation: MemoryOperation, *, store: str, query: str | None = None) -> _Nothing:
        return _NOTHING

    def compression(self, *, manual: bool) -> _Nothing:
        return _NOTHING

    def step(self, step: CompressionStep, *, piece: int | None = None) -> _Nothing:
        return _NOTHING

    async def flush(self, *, closing: str | None = None) -> None:
        return None


NO_TELEMETRY: Telemetry = NoTelemetry()
"""The telemetry of a session that exports nothing (the default)."""
