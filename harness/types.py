"""Wire types shared by the turn loop, the model clients, traces and compression.

Every value here is a frozen dataclass: a transcript is a tuple of `Message`s that is only
ever extended or (at compression) replaced, never edited in place. That is what keeps the
bytes we send stable from one request to the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from pydantic import JsonValue

__all__ = [
    "CacheBreakpoint",
    "JsonObject",
    "Message",
    "ModelReply",
    "ModelRequest",
    "Purpose",
    "Role",
    "ToolCall",
    "ToolChoice",
    "ToolResult",
    "ToolSpec",
    "Usage",
]

JsonObject: TypeAlias = dict[str, JsonValue]

Role = Literal["system", "user", "assistant", "tool"]
Purpose = Literal["turn", "flush", "summary", "search", "extract", "keep_warm"]
"""Why a request was sent; traces and the cache meter break totals down by it."""

ToolChoice: TypeAlias = Literal["auto", "none", "required"] | str
"""`auto`, `none`, `required`, or the name of one tool the model must call."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model.

    `arguments` is the raw JSON text exactly as the model produced it: it is replayed
    verbatim in later requests (re-serializing parsed arguments could change bytes).
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One transcript message.

    `content` is the canonical text (what the user typed, what the model said).
    `api_content`, when set, is the exact text that was sent to the model instead of
    `content` — a user message with fenced recall attached — and is replayed on every
    later request so earlier turns stay byte-identical.
    """

    role: Role
    content: str
    api_content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    """Tool name on `tool` messages."""
    summary: bool = False
    """True on the reference-only summary message that compression inserts."""
    store_id: int | None = field(default=None, compare=False)
    """The session store's id of this message once it is stored (None before, or with no
    store). Not part of equality: the same message stored or not is the same message. A
    capped tool result names it as the place its full output can be read."""

    @property
    def wire_content(self) -> str:
        """The text that goes on the wire for this message."""
        return self.content if self.api_content is None else self.api_content


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of running one tool call, ready to become a `tool` message."""

    call_id: str
    name: str
    content: str
    is_error: bool = False

    def to_message(self) -> Message:
        return Message(role="tool", content=self.content, tool_call_id=self.call_id, name=self.name)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    """Normalized token usage of one reply.

    `input` counts only *uncached* prompt tokens; the full prompt is
    `input + cache_read + cache_write` (the exclusive convention, as Anthropic reports it).
    Clients convert inclusive shapes (OpenAI's `cached_tokens`) into this one.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def prompt(self) -> int:
        """All prompt tokens, cached or not."""
        return self.input + self.cache_read + self.cache_write

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            reasoning=self.reasoning + other.reasoning,
        )


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call sends: tools, then the system prompt, then messages."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    purpose: Purpose = "turn"
    stable_prefix_chars: int | None = None
    """Length of the leading part of `system` that never changes within a session.
    Anthropic puts a cache breakpoint there; other clients ignore it."""
    deferred_tools: tuple[ToolSpec, ...] = ()
    """Tools the provider loads only when a tool result references them (native deferred
    loading, `mcp.defer_native`): Anthropic lists them with `defer_loading: true` after
    `tools` and sends a `tool` message whose JSON names some of them under `"tools"` (a
    `tool_search` result) as references to them. Other clients ignore it."""


@dataclass(frozen=True, slots=True)
class CacheBreakpoint:
    """Where a client placed a provider cache marker (Anthropic `cache_control`)."""

    at: Literal["tools", "system", "message"]
    index: int | None = None
    """Message index, for `message` breakpoints."""
    system_chars: int | None = None
    """For `system` breakpoints: the marker follows this many characters of the system prompt."""


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One complete model reply: an assistant message plus usage as reported.

    `breakpoints` and `cache_ttl` say where the client put cache markers on the request
    that produced this reply (empty for providers without explicit markers); traces record
    them so the cache meter can simulate the provider's cache.
    """

    message: Message
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    breakpoints: tuple[CacheBreakpoint, ...] = ()
    cache_ttl: Literal["5m", "1h"] | None = None
