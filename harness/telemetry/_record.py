"""The hot path of export-on: spans as plain records, queued for a worker thread.

Creating an OpenTelemetry SDK span costs tens of microseconds, about half a whole turn's
harness time with an instant model. So the turn loop does not: each operation is a
`SpanRecord` — its ids, its parent, two clock readings and the raw values it saw (the
request, the reply, the usage) — appended to a queue when it ends. `_worker.py` turns the
records into SDK spans, attributes and metrics on its own thread, while the loop waits for
the model. This module imports nothing from OpenTelemetry.

Parenting follows the current context: a context variable holds the open record of this
task (anyio copies the context into child tasks, so a tool call run in a task group is the
child of the turn that asked for it). Ids are drawn here, so a tool call can hand its
W3C trace context to an MCP server before its span exists anywhere else.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Literal, Self

import anyio.to_thread

from harness.telemetry.names import CompressionStep, MemoryOperation
from harness.telemetry.port import MemoryOutcome, RequestInfo
from harness.types import ModelReply, ModelRequest, ToolCall, Usage
from prompts.slots import SlotSpan

__all__ = [
    "CompressionRecord",
    "MemoryRecord",
    "RecordQueue",
    "Recording",
    "RequestRecord",
    "SpanRecord",
    "StepRecord",
    "ToolRecord",
    "TurnRecord",
    "trace_context",
    "traceparent",
]

RecordQueue = deque["SpanRecord"]
_CURRENT: ContextVar[SpanRecord | None] = ContextVar("keel_telemetry_span", default=None)
_rand = random.getrandbits  # as the SDK's own id generator: seeded from os.urandom at import
# Span ids count up from a random start (cheaper than drawing each; unique within the process,
# and across processes as unlikely to collide as drawn ids). Trace ids are drawn per root.
_span_ids = itertools.count(_rand(63) | 1)
_MASK64 = (1 << 64) - 1


def traceparent(trace_id: int, span_id: int) -> str:
    """The W3C `traceparent` value naming one sampled span."""
    return f"00-{trace_id:032x}-{span_id:016x}-01"


def trace_context() -> dict[str, str]:
    """The W3C trace context (`traceparent`) of the span this task is in, for a request's
    `params._meta` (an MCP call), so the server's spans join the trace; empty when nothing
    is traced (export off, or outside every span)."""
    current = _CURRENT.get()
    return {} if current is None else {"traceparent": traceparent(current.trace_id, current.span_id)}


class SpanRecord:
    """One operation: entered as the current span, queued for the worker when it ends.

    Attributes:
        trace_id, span_id, parent_id: W3C ids (the parent's span id, 0 for a root).
        start_ns, end_ns: wall-clock nanoseconds.
        error: the type name of the exception that ended it, if one did.
    """

    __slots__ = ("_queue", "_token", "end_ns", "error", "parent_id", "span_id", "start_ns", "trace_id")
    kind: Literal["turn", "request", "tool", "memory", "compression", "step"]

    def __init__(self, queue: RecordQueue) -> None:
        parent = _CURRENT.get()
        self.trace_id: int = _rand(128) if parent is None else parent.trace_id
        self.parent_id: int = 0 if parent is None else parent.span_id
        self.span_id: int = next(_span_ids) & _MASK64 or 1
        self._queue = queue
        self.start_ns = 0
        self.end_ns = 0
        self.error: str | None = None
        self._token: Token[SpanRecord | None] | None = None

    def __enter__(self) -> Self:
        self.start_ns = time.time_ns()
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self.end_ns = time.time_ns()
        if exc_type is not None:
            self.error = exc_type.__qualname__
        if self._token is not None:
            _CURRENT.reset(self._token)
        self._queue.append(self)


class TurnRecord(SpanRecord):
    __slots__ = ("conversation_id", "iterations", "session_id", "stop_reason", "turn")
    kind = "turn"

    def __init__(self, queue: RecordQueue, *, conversation_id: str, session_id: str, turn: int) -> None:
        super().__init__(queue)
        self.conversation_id = conversation_id
        self.session_id = session_id
        self.turn = turn
        self.stop_reason: str | None = None
        self.iterations = 0

    def ended(self, *, stop_reason: str, iterations: int) -> None:
        self.stop_reason = stop_reason
        self.iterations = iterations


class RequestRecord(SpanRecord):
    __slots__ = ("first_chunk_ns", "info", "reply", "reported", "request", "slots", "usage")
    kind = "request"

    def __init__(self, queue: RecordQueue, request: ModelRequest, info: RequestInfo) -> None:
        super().__init__(queue)
        self.request = request
        self.info = info
        self.first_chunk_ns = 0
        self.reply: ModelReply | None = None
        self.usage: Usage | None = None
        self.reported = False
        self.slots: tuple[SlotSpan, ...] = ()

    def first_chunk(self) -> None:
        if not self.first_chunk_ns:
            self.first_chunk_ns = time.time_ns()

    def replied(
        self, reply: ModelReply, usage: Usage, *, reported: bool, slots: tuple[SlotSpan, ...]
    ) -> None:
        self.reply = reply
        self.usage = usage
        self.reported = reported
        self.slots = slots


class ToolRecord(SpanRecord):
    __slots__ = ("call", "content", "is_error", "mcp")
    kind = "tool"

    def __init__(self, queue: RecordQueue, call: ToolCall, *, mcp: bool) -> None:
        super().__init__(queue)
        self.call = call
        self.mcp = mcp
        self.content: str | None = None
        self.is_error = False

    def result(self, content: str, *, is_error: bool) -> None:
        self.content = content
        self.is_error = is_error


class MemoryRecord(SpanRecord):
    __slots__ = ("count", "operation", "outcome_value", "query", "reason", "store")
    kind = "memory"

    def __init__(
        self, queue: RecordQueue, operation: MemoryOperation, *, store: str, query: str | None
    ) -> None:
        super().__init__(queue)
        self.operation = operation
        self.store = store
        self.query = query
        self.count: int | None = None
        self.outcome_value: MemoryOutcome | None = None
        self.reason: str | None = None

    def found(self, count: int) -> None:
        self.count = count

    def outcome(self, outcome: MemoryOutcome, *, reason: str | None = None) -> None:
        self.outcome_value = outcome
        self.reason = reason


class CompressionRecord(SpanRecord):
    __slots__ = ("manual", "outcome", "tokens_after", "tokens_before")
    kind = "compression"

    def __init__(self, queue: RecordQueue, *, manual: bool) -> None:
        super().__init__(queue)
        self.manual = manual
        self.outcome: str | None = None
        self.tokens_before = 0
        self.tokens_after = 0

    def finished(self, *, outcome: str, tokens_before: int, tokens_after: int) -> None:
        self.outcome = outcome
        self.tokens_before = tokens_before
        self.tokens_after = tokens_after


class StepRecord(SpanRecord):
    __slots__ = ("piece", "step")
    kind = "step"

    def __init__(self, queue: RecordQueue, step: CompressionStep, *, piece: int | None) -> None:
        super().__init__(queue)
        self.step = step
        self.piece = piece


class Recording:
    """The `Telemetry` of export-on: records queued for `drain` (the worker's), run off the loop.

    Args:
        queue: where ended records go.
        drain: processes everything queued so far and exports it (blocking: it runs in a
            worker thread when a session flushes).
        forget: drops what was kept for a closed session's stream.
    """

    enabled = True

    def __init__(
        self, queue: RecordQueue, drain: Callable[[], None], forget: Callable[[str], None] = lambda _: None
    ) -> None:
        self._queue = queue
        self._drain = drain
        self._forget = forget

    def turn(self, *, conversation_id: str, session_id: str, turn: int) -> TurnRecord:
        return TurnRecord(self._queue, conversation_id=conversation_id, session_id=session_id, turn=turn)

    def request(self, request: ModelRequest, info: RequestInfo) -> RequestRecord:
        return RequestRecord(self._queue, request, info)

    def tool(self, call: ToolCall, *, mcp: bool = False) -> ToolRecord:
        return ToolRecord(self._queue, call, mcp=mcp)

    def memory(self, operation: MemoryOperation, *, store: str, query: str | None = None) -> MemoryRecord:
        return MemoryRecord(self._queue, operation, store=store, query=query)

    def compression(self, *, manual: bool) -> CompressionRecord:
        return CompressionRecord(self._queue, manual=manual)

    def step(self, step: CompressionStep, *, piece: int | None = None) -> StepRecord:
        return StepRecord(self._queue, step, piece=piece)

    async def flush(self, *, closing: str | None = None) -> None:
        def work() -> None:
            self._drain()
            if closing is not None:
                self._forget(closing)

        await anyio.to_thread.run_sync(work)
