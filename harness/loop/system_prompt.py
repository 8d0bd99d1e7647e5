"""The session's system prompt: its slots, how they are gathered, and when it is rebuilt.

The *static* slots (identity, tool guidance, provider block, system message, skills index,
context files, session line) are gathered by a `StaticSlots` function the wiring hands in
(`harness.wiring.slots`) at session start and at each compression; the MEMORY and USER slots come from the memory port under the snapshot
policy. `PromptAssembler` builds a `prompts.SystemPrompt` — text plus slot map with token
offsets — and `PromptState` holds the current one for the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from harness.loop.ports import MemoryBlocks, MemoryPort
from harness.tokens import Tokenizer
from harness.tools import ToolRegistry
from harness.trace import TraceSlot, trace_slots
from prompts import (
    SlotId,
    SystemPrompt,
    build_system_prompt,
)

__all__ = [
    "TAIL_SLOTS",
    "PromptAssembler",
    "PromptState",
    "StaticSlots",
    "memory_after_tools_order",
]

StaticSlots = Callable[[], Awaitable[Mapping[SlotId, str]]]
"""Gathers the non-memory slot texts (may do file I/O; runs at build time only)."""


TAIL_SLOTS: tuple[SlotId, ...] = ("memory", "user", "session")
"""The slots whose text changes within a conversation (a memory write shows after the next
compression, which also starts a new session id) or between sessions."""


def memory_after_tools_order(order: Sequence[SlotId]) -> tuple[SlotId, ...]:
    """`order` with the `TAIL_SLOTS` moved to its end (their own order kept)."""
    return tuple(s for s in order if s not in TAIL_SLOTS) + tuple(s for s in order if s in TAIL_SLOTS)


class PromptAssembler:
    """Builds `SystemPrompt`s; remembers the static slots between memory-only rebuilds.

    Args:
        memory_after_tools: the small-window local layout: the `TAIL_SLOTS` go last, and the
            request marks where they start (`PromptState.stable_chars`) so the embedded
            server's client sends them as a second system message, which chat templates
            render after the tool schemas. A memory write then re-reads only that tail and
            the conversation, not the guidance, skills index and tools before it.
    """

    def __init__(
        self,
        *,
        order: Sequence[SlotId],
        static: StaticSlots,
        tokenizer: Tokenizer,
        memory_after_tools: bool = False,
    ) -> None:
        self.memory_after_tools = memory_after_tools
        self._order = memory_after_tools_order(order) if memory_after_tools else tuple(order)
        self._gather = static
        self._tokenizer = tokenizer
        self._static: Mapping[SlotId, str] | None = None

    async def refresh_static(self) -> None:
        """Re-gather the static slots (session start and compression rebuilds)."""
        self._static = await self._gather()

    async def build(self, blocks: MemoryBlocks) -> SystemPrompt:
        if self._static is None:
            await self.refresh_static()
        assert self._static is not None
        texts: dict[SlotId, str] = dict(self._static)
        texts["memory"] = blocks.memory
        texts["user"] = blocks.user
        return build_system_prompt(texts, order=self._order, count_tokens=self._tokenizer.count)


class PromptState:
    """The current frozen prefix, and the memory blocks it was built from."""

    def __init__(
        self,
        assembler: PromptAssembler,
        memory: MemoryPort | None,
        *,
        tools: ToolRegistry | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self._assembler = assembler
        self._memory = memory
        self._tools = tools
        self._warn = warn
        self._blocks = MemoryBlocks("", "")
        self.prompt = SystemPrompt("", ())

    @property
    def text(self) -> str:
        return self.prompt.text

    @property
    def stable_chars(self) -> int:
        """Where the text that changes within a conversation starts, under the local layout
        (the first non-empty `TAIL_SLOTS` slot); the whole text otherwise."""
        if not self._assembler.memory_after_tools:
            return len(self.text)
        starts = [s.start for s in self.prompt.slots if s.name in TAIL_SLOTS and s.end > s.start]
        return min(starts, default=len(self.text))

    @property
    def memory(self) -> MemoryPort | None:
        """The curated store the MEMORY and USER slots come from (None: no curated memory)."""
        return self._memory

    async def rebuild(self, *, reload_memory: bool) -> None:
        """Re-gather every slot (session start, new conversation, compression).

        Args:
            reload_memory: take a new frozen memory snapshot first (`load()`).
        """
        if self._memory is not None and reload_memory:
            await self._memory.load()
        if self._tools is not None:
            # Tool sources (MCP servers) that announced a new tool list take it now, with the
            # rest of the prefix; between rebuilds the tools stay as they were.
            for note in await self._tools.refresh():
                if self._warn is not None:
                    self._warn(note)
        await self._assembler.refresh_static()
        self._blocks = await self._blocks_now()
        self.prompt = await self._assembler.build(self._blocks)

    async def refresh(self) -> None:
        """Before a request: rebuild if the snapshot policy now shows other memory blocks."""
        blocks = await self._blocks_now()
        if blocks != self._blocks:
            self._blocks = blocks
            self.prompt = await self._assembler.build(blocks)

    def trace_slots(self) -> list[TraceSlot]:
        """The slot map as the trace records it."""
        return trace_slots(self.prompt.slots)

    async def _blocks_now(self) -> MemoryBlocks:
        return await self._memory.prompt_blocks() if self._memory is not None else MemoryBlocks("", "")
