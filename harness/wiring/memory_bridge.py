"""Adapters from the `memory` layers to the turn loop's ports.

`memory` knows nothing of the harness: its store returns its own value types. This module is
the one place that maps them (the tools the memory layers offer are mapped in
`harness.tools.builtin`):

- `StoreMemory`: `MemoryStore` + `MemoryTool` as the session's `MemoryPort`;
- `ManagerHooks`: `MemoryManager` as the session's `ProviderHooks`;
- `DbRecorder`: a `SessionStore` as the session's `Recorder`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext

from anyio.abc import TaskGroup
from pydantic import JsonValue

from harness.events import FlushEntry
from harness.loop.ports import EndReason
from harness.telemetry import NO_TELEMETRY, Telemetry
from harness.types import Message, ToolCall, Usage
from harness.usage import usage_counts
from memory import (
    FlushMode,
    MemoryBlocks,
    MemoryManager,
    MemoryStore,
    MemoryTool,
    SessionStore,
    StoredMessage,
    SwitchReason,
    TurnMessage,
)
from memory.sessions import JournalledWriter, SessionWriter, StoredUsage

__all__ = ["DbRecorder", "ManagerHooks", "StoreMemory", "restored", "stored"]


class StoreMemory:
    """The curated store as the session's `MemoryPort`.

    A `shared` store (a shared workspace's MEMORY.md) is frozen with the session's own and
    shown after it in the MEMORY slot; the memory tool never writes to it. `pin` makes the
    next load read the versions a resumed session started with.
    """

    def __init__(self, store: MemoryStore, tool: MemoryTool, *, shared: MemoryStore | None = None) -> None:
        self.store = store
        self.tool = tool
        self.shared = shared
        self._pin: str | None = None

    def pin(self, snapshot: str | None) -> None:
        """Load `snapshot` (a `MemoryStore.snapshot_pin()`) at the next `load` instead of the current versions."""
        self._pin = snapshot

    async def load(self) -> None:
        pin, self._pin = self._pin, None
        await self.store.load(pinned=pin)
        if self.shared is not None:
            await self.shared.load()

    async def prompt_blocks(self) -> MemoryBlocks:
        own = await self.store.prompt_blocks()
        if self.shared is None:
            return own
        shared = (await self.shared.prompt_blocks()).memory
        return MemoryBlocks(memory="\n\n".join(b for b in (own.memory, shared) if b), user=own.user)

    def start_turn(self) -> None:
        self.tool.start_turn()


class ManagerHooks:
    """`MemoryManager` as the session's `ProviderHooks`.

    Recall follows the prefetch design: after turn N, in the background, the providers
    compute recall for turn N+1 from turn N's message; turn N+1 reads it, waiting at most
    `warm_wait_s` for a prefetch still running. Only a turn with no prefetch (the first, or
    after a switch) starts one on the spot and waits up to the session's `wait_s`.
    """

    def __init__(
        self,
        manager: MemoryManager,
        background: TaskGroup,
        *,
        warm_wait_s: float = 1.0,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self.manager = manager
        self._tg = background
        self._warm_wait_s = warm_wait_s
        self._telemetry = telemetry

    async def on_turn_start(self, turn: int, message: str) -> None:
        await self.manager.on_turn_start(turn, message)

    async def recall(self, *, turn: int, query: str, wait_s: float) -> str:
        warm = self.manager.has_round(turn)
        if not warm:
            # The session asks only for messages it judged worth recalling for.
            self.manager.start_prefetch(self._tg, turn=turn, query=query, trivial=False)
        store = self.manager.external  # the built-in layer recalls nothing: no span for it
        span = (
            nullcontext()
            if store is None
            else self._telemetry.memory("search_memory", store=store, query=query)
        )
        with span:
            recalled = await self.manager.recall(
                turn=turn, wait_s=min(self._warm_wait_s, wait_s) if warm else wait_s
            )
        return recalled.text

    def after_turn(self, tg: TaskGroup, *, turn: int, user: str, assistant: str, trivial: bool) -> None:
        self.manager.sync_turn(tg, user_content=user, assistant_content=assistant)
        self.manager.queue_prefetch(tg, query=user, trivial=trivial)
        self.manager.start_prefetch(tg, turn=turn + 1, query=user, trivial=trivial)

    async def on_pre_compress(self, messages: Sequence[Message]) -> str:
        return await self.manager.on_pre_compress(_turn_messages(messages))

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: SwitchReason
    ) -> None:
        await self.manager.on_session_switch(
            new_session_id, parent_session_id=parent_session_id, reason=reason
        )

    async def on_session_end(self, messages: Sequence[Message]) -> None:
        await self.manager.on_session_end(_turn_messages(messages))

    def flushing(self) -> AbstractContextManager[None]:
        return self.manager.running_as("flush")

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        await self.manager.on_delegation(task, result, child_session_id=child_session_id)

    def system_prompt_block(self) -> str:
        return self.manager.system_prompt_block()


def _turn_messages(messages: Sequence[Message]) -> list[TurnMessage]:
    return [TurnMessage(role=m.role, content=m.content) for m in messages]


def restored(message: StoredMessage) -> Message:
    """A stored message back as a transcript message (the inverse of `stored`)."""
    calls = tuple(
        ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"]))
        for c in (json.loads(message.tool_calls) if message.tool_calls else [])
    )
    return Message(
        role=message.role,
        content=message.content,
        api_content=message.api_content,
        tool_calls=calls,
        tool_call_id=message.tool_call_id,
        name=message.tool_name,
        summary=message.summary,
    )


def stored(message: Message, *, timestamp: float, token_count: int | None) -> StoredMessage:
    """A transcript message as the session store keeps it."""
    calls = (
        json.dumps(
            [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls],
            ensure_ascii=False,
        )
        if message.tool_calls
        else None
    )
    return StoredMessage(
        role=message.role,
        content=message.content,
        timestamp=timestamp,
        api_content=message.api_content,
        tool_calls=calls,
        tool_call_id=message.tool_call_id,
        tool_name=message.name,
        token_count=token_count,
        summary=message.summary,
    )


class DbRecorder:
    """A `SessionStore` as the session's `Recorder`.

    Every session it starts — the first, each child after a compression, a new conversation —
    is recorded for `user_id`, so a lineage never leaves its principal's scope. With a
    `journal` (what `open_session` builds), a write the store refuses is journalled on local
    disk before the call returns, and replayed when the store takes writes again.

    A reply's usage is not a write of its own: `add_usage` holds it, and the session's next
    message (the reply itself, nearly always) carries it into the same transaction — one
    write per model call instead of two. Ending the session writes what is still held.
    """

    def __init__(
        self,
        db: SessionStore,
        *,
        source: str,
        clock: Callable[[], float] = time.time,
        user_id: str = "",
        journal: JournalledWriter | None = None,
        memory_snapshot: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.db = db
        self.journal = journal
        self._writes: SessionWriter = db if journal is None else journal
        self._source = source
        self._clock = clock
        self.user_id = user_id
        self._memory_snapshot = memory_snapshot
        self._held: dict[str, tuple[Usage, int]] = {}
        """Per session: usage not written yet, and how many model calls it covers."""

    async def start_session(self, session_id: str, *, model: str, parent_session_id: str | None) -> None:
        await self._writes.create_session(
            session_id,
            source=self._source,
            started_at=self._clock(),
            model=model,
            parent_session_id=parent_session_id,
            user_id=self.user_id,
            memory_snapshot=self._memory_snapshot(),
        )

    async def end_session(self, session_id: str, *, reason: EndReason) -> None:
        held = self._held.pop(session_id, None)
        if held is not None:
            try:
                await self._writes.add_usage(session_id, **usage_counts(held[0]), api_calls=held[1])
            except BaseException:
                self._hold(session_id, *held)  # for the next attempt
                raise
        await self._writes.end_session(session_id, reason=reason, ended_at=self._clock())

    async def append_message(
        self, session_id: str, message: Message, *, token_count: int | None
    ) -> int | None:
        with self._riding_usage(session_id) as usage:
            row_id = await self._writes.append_message(
                session_id, stored(message, timestamp=self._clock(), token_count=token_count), usage=usage
            )
        # a journalled write has no id yet: the capped text then says the rest is not kept
        return row_id if isinstance(row_id, int) else None

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        token_counts: Sequence[int | None],
        timestamps: Sequence[float] | None = None,
    ) -> list[int]:
        times = [self._clock()] * len(messages) if timestamps is None else timestamps
        rows = [
            stored(m, timestamp=t, token_count=n)
            for m, n, t in zip(messages, token_counts, times, strict=True)
        ]
        with self._riding_usage(session_id) as usage:
            return await self._writes.append_messages(session_id, rows, usage=usage)

    @contextmanager
    def _riding_usage(self, session_id: str) -> Iterator[StoredUsage | None]:
        """The usage held for `session_id`, for the write in the block; held again if it fails.

        Taken out before the write: usage added meanwhile (a background call) waits for the next."""
        held = self._held.pop(session_id, None)
        try:
            yield None if held is None else StoredUsage(**usage_counts(held[0]), api_calls=held[1])
        except BaseException:
            if held is not None:
                self._hold(session_id, *held)  # the message is retried; its usage goes with it
            raise

    async def add_usage(self, session_id: str, usage: Usage) -> None:
        """Hold `usage` for the session's next message (see the class doc); nothing is written now."""
        self._hold(session_id, usage, 1)

    def _hold(self, session_id: str, usage: Usage, calls: int) -> None:
        held = self._held.get(session_id)
        self._held[session_id] = (usage, calls) if held is None else (held[0] + usage, held[1] + calls)

    async def record_flush(
        self, session_id: str, *, mode: FlushMode, entries: Sequence[FlushEntry], reply_text: str
    ) -> None:
        def row(e: FlushEntry) -> JsonValue:
            kept: dict[str, JsonValue] = {
                "target": e.target,
                "action": e.action,
                "content": e.content,
                "reason": e.reason,
            }
            # what `keel memory list --why` shows: whether a flush or a review wrote it, and
            # the message it rests on
            return {**kept, "via": e.via, "grounded_on": e.grounded_on} if e.saved else kept

        await self._writes.record_flush(
            session_id,
            timestamp=self._clock(),
            mode=mode,
            saved=[row(e) for e in entries if e.saved],
            refused=[row(e) for e in entries if not e.saved],
            reply=reply_text,
        )
