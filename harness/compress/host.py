"""What a compression needs from the session it compresses, and the settings it runs under.

`CompressionHost` is the one seam between `compress/` and the turn loop: the loop
implements it, `run.py` depends only on it, and `compress/` never imports `loop/`. Tests
can drive a compression with any object that has these members.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from harness.compress.flush import FlushReply
from harness.events import Event, FlushEntry, UsageReported
from harness.tools import Tool
from harness.types import Message, ModelReply, ModelRequest, ToolSpec
from memory import FlushMode

__all__ = ["CompressionHost", "CompressionSettings", "Emit"]

Emit = Callable[[Event], Awaitable[None]]
"""Where a compression sends its progress events."""


@dataclass(frozen=True, slots=True)
class CompressionSettings:
    """The `compression` settings one session runs under (from `KeelConfig.compression`).

    Attributes:
        enabled: compress automatically when the prompt reaches the threshold.
        threshold_tokens: the prompt size (model tokens) that triggers a compression.
        flush: the flush mode (`memory_only`, `cache_safe`, `forced`, `off`).
        flush_reply: how the flush asks for facts (`text_list` lines or `tool_calls`).
        flush_max_tokens: the flush reply's output cap.
        context_window: the model's window (sizes the summary target).
        tail_ratio: the protected tail's token budget as a fraction of the threshold.
        protect_first_n: head messages kept on the first compression.
        protect_last_n: the tail always keeps at least this many messages.
        identifier_index: put the middle's identifiers verbatim into the summary message.
        summary_temperature: the summary request's sampling temperature (the model's
            `model.temperature`; None: the provider's default).
        review_interval: a memory review every this many user turns (0: never).
        flush_chunk_tokens: N — the flush covers the turns the compression drops, in pieces
            of at most N tokens, one request each (`flush/_pieces.py`); 0 — one request
            over the whole transcript.
    """

    enabled: bool
    threshold_tokens: int
    flush: FlushMode
    flush_max_tokens: int | None
    context_window: int
    flush_reply: FlushReply = "text_list"
    tail_ratio: float = 0.2
    protect_first_n: int = 3
    protect_last_n: int = 6
    identifier_index: bool = True
    summary_temperature: float | None = None
    review_interval: int = 0
    flush_chunk_tokens: int = 512


class CompressionHost(Protocol):
    """The session as a compression sees it."""

    @property
    def session_id(self) -> str:
        """The current session row (changes when the compression continues as a child)."""
        ...

    @property
    def turn(self) -> int:
        """The current user turn's number (1-based; 0 before the first turn)."""
        ...

    @property
    def messages(self) -> Sequence[Message]:
        """The transcript as the next request would send it."""
        ...

    async def save(self) -> None:
        """Write the turn's rows still waiting for the store, so `messages` carry their store ids."""
        ...

    @property
    def system_prompt(self) -> str:
        """The current frozen prefix."""
        ...

    @property
    def memory_snapshot(self) -> str:
        """The memory and user blocks of the frozen prefix, as it shows them ("" without
        curated memory): what a flush entry that repeats them is "already in memory" by."""
        ...

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The session's tool list, unchanged (the cache-safe flush sends exactly this)."""
        ...

    def tool(self, name: str) -> Tool | None:
        """A registered tool by name (the flush runs `memory` directly)."""
        ...

    def count(self, message: Message) -> int:
        """One message's size in the model's tokens (an estimate)."""
        ...

    def prompt_estimate(self) -> int:
        """The next request's prompt size, from the last reported usage where valid."""
        ...

    def base_estimate(self) -> int:
        """The system prompt and tools alone, with no messages (what no compression can shrink)."""
        ...

    def full_estimate(self) -> int:
        """The next request's prompt size counted from scratch (before/after figures)."""
        ...

    def today(self) -> date:
        """The date written into the summary prompt."""
        ...

    async def call(self, request: ModelRequest, *, summary: bool = False) -> tuple[ModelReply, UsageReported]:
        """Send one request (traced and accounted); `summary=True` uses the summary model.

        Raises:
            ModelError: the call failed after retries.
        """
        ...

    def flushing(self) -> AbstractContextManager[None]:
        """Within this block the agent runs as `flush`: memory providers must not write."""
        ...

    async def record_flush(self, *, mode: FlushMode, entries: Sequence[FlushEntry], reply_text: str) -> None:
        """Log the flush (note and reply never enter the transcript)."""
        ...

    async def pre_compress(self, middle: Sequence[Message]) -> str:
        """Text the memory providers want the summary to keep."""
        ...

    async def reload_memory(self) -> None:
        """Take a new frozen memory snapshot and rebuild the system prompt."""
        ...

    async def continue_as_child(self, messages: Sequence[Message]) -> None:
        """End the session row (reason `compression`) and continue in a child holding `messages`."""
        ...
