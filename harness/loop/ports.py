"""The seams between the turn loop and the memory layers.

The session talks to memory, persistence and recall only through these small protocols;
`harness/wiring/memory_bridge.py` adapts the concrete `memory` classes to them. Tests pass fakes, and a
user can plug in their own (a different store, a remote transcript log).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from anyio.abc import TaskGroup

from harness.events import FlushEntry
from harness.types import Message, Usage
from memory import EndReason as MemoryEndReason
from memory import FlushMode, MemoryBlocks, SwitchReason

__all__ = [
    "EndReason",
    "MemoryBlocks",
    "MemoryPort",
    "NoProviders",
    "NullRecorder",
    "ProviderHooks",
    "Recorder",
    "SwitchReason",
]

EndReason = MemoryEndReason  # the session store's vocabulary


class MemoryPort(Protocol):
    """The curated store as the turn loop sees it."""

    async def load(self) -> None:
        """Re-read the files and take a new frozen snapshot (session start, after compression)."""
        ...

    async def prompt_blocks(self) -> MemoryBlocks:
        """The blocks the next request's system prompt shows, per the snapshot policy."""
        ...

    def start_turn(self) -> None:
        """A new user turn began (resets the memory tool's per-turn failure count)."""
        ...


class Recorder(Protocol):
    """Where sessions and their messages are persisted as they happen."""

    async def start_session(self, session_id: str, *, model: str, parent_session_id: str | None) -> None: ...

    async def end_session(self, session_id: str, *, reason: EndReason) -> None: ...

    async def append_message(
        self, session_id: str, message: Message, *, token_count: int | None
    ) -> int | None:
        """Persist one message; returns its id in the store (None for a recorder that keeps no ids)."""
        ...

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        token_counts: Sequence[int | None],
        timestamps: Sequence[float] | None = None,
    ) -> Sequence[int] | None:
        """Append several messages in one transaction (a turn's deferred rows, a child session's
        copied transcript), said at `timestamps` (None: now); returns their ids in the store
        (None for a recorder that keeps no ids)."""
        ...

    async def add_usage(self, session_id: str, usage: Usage) -> None: ...

    async def record_flush(
        self, session_id: str, *, mode: FlushMode, entries: Sequence[FlushEntry], reply_text: str
    ) -> None: ...


class ProviderHooks(Protocol):
    """The external memory provider(s), as the turn loop drives them.

    Every hook must isolate provider failures itself: a broken provider never ends a turn.
    """

    async def on_turn_start(self, turn: int, message: str) -> None: ...

    async def recall(self, *, turn: int, query: str, wait_s: float) -> str:
        """Recalled text for this turn ("" for none), returned within `wait_s` seconds.

        The one bound on the recall wait lives here: the hooks know whether a prefetch is
        already running (a warm turn may wait less). The session has already skipped
        trivial messages ("ok", "/usage"), so the hooks do not check again.
        """
        ...

    def after_turn(self, tg: TaskGroup, *, turn: int, user: str, assistant: str, trivial: bool) -> None:
        """Start background work for a finished turn (sync it, warm the next recall) in `tg`.

        `trivial`: the session judged `user` too slight to recall for (`is_trivial`, once per
        turn); nothing is prefetched from it, and the hooks take the judgement as given.
        """
        ...

    async def on_pre_compress(self, messages: Sequence[Message]) -> str:
        """Text the providers want the summary to keep."""
        ...

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: SwitchReason
    ) -> None:
        """The session id changed (`compression`: a child continues; `new`: a fresh conversation)."""
        ...

    async def on_session_end(self, messages: Sequence[Message]) -> None:
        """A conversation ended (exit, /new, or compression of the turns it held)."""
        ...

    def flushing(self) -> AbstractContextManager[None]:
        """Within this block the agent runs as `flush`: providers must not write."""
        ...

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        """A subagent this session started finished `task` with `result`."""
        ...

    def system_prompt_block(self) -> str:
        """Slot 2: static provider instructions for this session."""
        ...


class NoProviders:
    """No external memory provider."""

    async def on_turn_start(self, turn: int, message: str) -> None:
        return None

    async def recall(self, *, turn: int, query: str, wait_s: float) -> str:
        return ""

    def after_turn(self, tg: TaskGroup, *, turn: int, user: str, assistant: str, trivial: bool) -> None:
        return None

    async def on_pre_compress(self, messages: Sequence[Message]) -> str:
        return ""

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: SwitchReason
    ) -> None:
        return None

    async def on_session_end(self, messages: Sequence[Message]) -> None:
        return None

    def flushing(self) -> AbstractContextManager[None]:
        return nullcontext()

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        return None

    def system_prompt_block(self) -> str:
        return ""


class NullRecorder:
    """A recorder that keeps nothing (sessions without a state database)."""

    async def start_session(self, session_id: str, *, model: str, parent_session_id: str | None) -> None:
        return None

    async def end_session(self, session_id: str, *, reason: EndReason) -> None:
        return None

    async def append_message(
        self, session_id: str, message: Message, *, token_count: int | None
    ) -> int | None:
        return None

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        token_counts: Sequence[int | None],
        timestamps: Sequence[float] | None = None,
    ) -> Sequence[int] | None:
        return None

    async def add_usage(self, session_id: str, usage: Usage) -> None:
        return None

    async def record_flush(
        self, session_id: str, *, mode: FlushMode, entries: Sequence[FlushEntry], reply_text: str
    ) -> None:
        return None
