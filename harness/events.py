"""Events a turn streams to its caller.

Every event is a frozen dataclass with a `kind` discriminator; `EVENT_ADAPTER` (one pydantic
`TypeAdapter` over the union) turns any event into JSON and back, so a UI, a log or a test
can consume the stream without knowing the classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, TypeAlias

from pydantic import Field, TypeAdapter

from harness.types import Purpose
from memory import FlushMode

__all__ = [
    "EVENT_ADAPTER",
    "CompressionFinished",
    "CompressionStarted",
    "Event",
    "FlushCompleted",
    "FlushEntry",
    "MemoryWritten",
    "PrefillProgress",
    "RecallAttached",
    "StopReason",
    "TextDelta",
    "ToolCallStarted",
    "ToolResultReady",
    "TurnEnded",
    "UsageReported",
    "Warning",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Streamed assistant text."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class PrefillProgress:
    """The model is still reading its prompt: `done` of `total` tokens (the embedded model
    reports this during a long prefill; other endpoints never do)."""

    done: int
    total: int
    kind: Literal["prefill"] = "prefill"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    call_id: str
    name: str
    arguments: str
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolResultReady:
    call_id: str
    name: str
    content: str
    is_error: bool
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class MemoryWritten:
    """A curated-memory write that committed to disk."""

    action: Literal["add", "replace", "remove"]
    target: Literal["memory", "user"]
    content: str
    kind: Literal["memory_write"] = "memory_write"


@dataclass(frozen=True, slots=True)
class RecallAttached:
    """Recall from the external provider was fenced onto this turn's user message."""

    chars: int
    kind: Literal["recall"] = "recall"


@dataclass(frozen=True, slots=True)
class UsageReported:
    """Token usage of one model call. `reported` is False when the provider sent none
    and the numbers are our tokenizer's estimate."""

    purpose: Purpose
    input: int
    output: int
    cache_read: int
    cache_write: int
    reported: bool
    latency_s: float
    reasoning: int = 0
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class CompressionStarted:
    tokens_before: int
    threshold: int
    manual: bool
    kind: Literal["compression_started"] = "compression_started"


@dataclass(frozen=True, slots=True)
class FlushEntry:
    """One memory write the flush attempted."""

    target: str
    action: str
    content: str
    saved: bool
    reason: str = ""
    via: str = "flush"
    """What wrote it: `flush` (at a compression) or `review` (the periodic memory review)."""
    grounded_on: str = ""
    """The user's (or a tool's) message it rests on, cut short ("" when unknown)."""


@dataclass(frozen=True, slots=True)
class FlushCompleted:
    """The pre-compression memory flush finished: what it saved and what was refused (and why)."""

    mode: FlushMode
    entries: tuple[FlushEntry, ...]
    latency_s: float
    kind: Literal["flush_completed"] = "flush_completed"


@dataclass(frozen=True, slots=True)
class CompressionFinished:
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    summary_fallback: bool
    aborted: bool
    new_session_id: str | None
    kind: Literal["compression_finished"] = "compression_finished"


@dataclass(frozen=True, slots=True)
class Warning:  # the event is a warning for the user, not Python's warnings
    message: str
    kind: Literal["warning"] = "warning"


StopReason: TypeAlias = Literal["final", "max_iterations"]


@dataclass(frozen=True, slots=True)
class TurnEnded:
    final_text: str
    iterations: int
    stop_reason: StopReason
    kind: Literal["turn_end"] = "turn_end"


Event: TypeAlias = Annotated[
    TextDelta
    | PrefillProgress
    | ToolCallStarted
    | ToolResultReady
    | MemoryWritten
    | RecallAttached
    | UsageReported
    | CompressionStarted
    | FlushCompleted
    | CompressionFinished
    | Warning
    | TurnEnded,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
