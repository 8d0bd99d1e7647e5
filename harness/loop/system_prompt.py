"""Assemble the session's system prompt from its slot texts.

The *static* slots (identity, tool guidance, provider block, system message, skills index,
context files, session line) are gathered once per build by a callable the wiring provides;
the MEMORY and USER slots come from the memory port under the snapshot policy. The result is
a `prompts.SystemPrompt` — text plus slot map with token offsets.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from harness.loop.ports import MemoryBlocks
from harness.tokens import Tokenizer
from prompts.builder import build_system_prompt
from prompts.slots import SlotId, SystemPrompt

__all__ = ["PromptAssembler", "StaticSlots"]

StaticSlots = Callable[[], Awaitable[Mapping[SlotId, str]]]
"""Gathers the non-memory slot texts (may do file I/O; runs at build time only)."""


class PromptAssembler:
    """Builds `SystemPrompt`s; remembers the static slots between memory-only rebuilds."""

    def __init__(self, *, order: Sequence[SlotId], static: StaticSlots, tokenizer: Tokenizer) -> None:
        self._order = tuple(order)
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
