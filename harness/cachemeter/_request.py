"""The meter's one internal request type, whatever trace format it came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from harness.types import Purpose, ToolSpec, Usage

__all__ = [
    "MeterBreakpoint",
    "MeterMessage",
    "MeterRequest",
    "MeterSlot",
    "MeterTool",
    "MeterToolCall",
    "ReportedUsage",
]


MeterTool: TypeAlias = ToolSpec
"""A tool as a request declared it: the wire type itself (name, description, JSON schema)."""


@dataclass(frozen=True, slots=True)
class MeterToolCall:
    id: str
    name: str
    arguments: str
    """Raw JSON text, exactly as sent."""


@dataclass(frozen=True, slots=True)
class MeterMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[MeterToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class MeterSlot:
    """A named character range of the system prompt (keel's slot map)."""

    name: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class MeterBreakpoint:
    """An Anthropic cache_control marker: after the tools, the system prompt, or a message."""

    at: Literal["tools", "system", "message"]
    index: int | None = None
    """Message index (into `MeterRequest.messages`) for `message` breakpoints."""
    system_chars: int | None = None
    """For `system` breakpoints: after this many characters of the system prompt (None: all)."""


ReportedUsage: TypeAlias = Usage
"""What the provider said about the prompt: keel's own `Usage` (exclusive counts)."""


@dataclass(frozen=True, slots=True)
class MeterRequest:
    """One model request, normalized from a keel trace line or a foreign chat line.

    Attributes:
        kind: the format it came from.
        line: 1-based line number in its file (0 when built in memory).
        model: the model name; caches are per model.
        timestamp: seconds since the epoch, None when the line had none.
        tools, system, slots, messages: what was sent, in cache order.
        system_messages: a chat line's leading system messages when there were several, as
            sent (`system` joins them with a blank line); renderers keep them apart, as the
            server's template sees them. Empty for one system prompt.
        message_base: leading system messages of a chat line lifted into `system`; message
            indices in reports add it back, so they match the line's own numbering.
        breakpoints, cache_ttl: Anthropic cache markers, when the line recorded them.
        usage: the provider's reported usage, when the line recorded it.
    """

    kind: Literal["keel", "chat"]
    model: str
    system: str = ""
    messages: tuple[MeterMessage, ...] = ()
    system_messages: tuple[str, ...] = ()
    tools: tuple[MeterTool, ...] = ()
    slots: tuple[MeterSlot, ...] = ()
    timestamp: float | None = None
    session_id: str | None = None
    turn: int | None = None
    purpose: Purpose = "turn"
    line: int = 0
    message_base: int = 0
    breakpoints: tuple[MeterBreakpoint, ...] = ()
    cache_ttl: Literal["5m", "1h"] | None = None
    usage: ReportedUsage | None = None
