"""The session's system prompt: its slots, how they are gathered, and when it is rebuilt.

The *static* slots (identity, tool guidance, provider block, system message, skills index,
context files, session line) are gathered by `static_slot_gatherer` at session start and at
each compression; the MEMORY and USER slots come from the memory port under the snapshot
policy. `PromptAssembler` builds a `prompts.SystemPrompt` — text plus slot map with token
offsets — and `PromptState` holds the current one for the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import anyio
import anyio.to_thread

from harness.config import KeelConfig
from harness.loop.ports import MemoryBlocks, MemoryPort
from harness.tokens import Tokenizer
from harness.tools import ToolRegistry
from harness.trace import TraceSlot, trace_slots
from memory import MemoryManager, scan
from memory.skills import SkillLibrary, load_skills_index
from prompts import (
    SlotId,
    SystemPrompt,
    build_system_prompt,
    discover_context_files,
    load_text,
    read_text_capped,
    render_context_files,
    session_line,
)

__all__ = ["PromptAssembler", "PromptState", "SkillsPin", "StaticSlots", "static_slot_gatherer"]

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


def _context_scan(text: str) -> list[str]:
    return [f.id for f in scan(text, "context")]


def _read_identity(soul: Path, refuse: Callable[[str, str], None]) -> tuple[str, bool]:
    """SOUL.md's text (scanned; never through a symbolic link), else the default identity."""
    if soul.is_symlink():
        refuse(str(soul), "it is a symbolic link (links are never followed)")
        return load_text("identity"), False
    if soul.is_file():
        try:
            text = read_text_capped(soul, 64 * 1024).strip()
        except OSError:
            return load_text("identity"), False
        hits = _context_scan(text)
        if hits:
            return (
                f"[BLOCKED: SOUL.md matched threat pattern(s) {', '.join(hits)}; not loaded.]\n\n"
                + load_text("identity")
            ), True
        if text:
            return text, True
    return load_text("identity"), False


@dataclass(slots=True)
class SkillsPin:
    """The skills slot across a resume, as the curated pin is for memory: what the latest
    build showed (`shown`, which the session row records) and what the next build shows
    instead of today's index (`pinned`, once: a resumed session's recorded slot)."""

    shown: str | None = None
    pinned: str | None = None

    def take(self) -> str | None:
        text, self.pinned = self.pinned, None
        return text


def static_slot_gatherer(
    config: KeelConfig,
    *,
    home: Path,
    tools: ToolRegistry,
    manager: MemoryManager,
    skills: SkillLibrary | None,
    model_name: str,
    shared_skills: SkillLibrary | None = None,
    today: Callable[[], date],
    cwd: Path,
    warn: Callable[[str], None] = lambda _message: None,
    skills_pin: SkillsPin | None = None,
) -> StaticSlots:
    """The function that gathers every non-memory slot (runs at each prompt build).

    `warn` hears (once each) about a SOUL.md or context file that was refused (a symbolic link).
    `skills_pin` hears what the skills slot showed, and gives a resumed session its recorded one.
    """
    warned: set[str] = set()

    def refuse(label: str, why: str) -> None:
        if label not in warned:
            warned.add(label)
            warn(f"{label} was not loaded into the prompt: {why}")

    async def gather() -> Mapping[SlotId, str]:
        soul = home / "SOUL.md"
        identity, soul_used = await anyio.to_thread.run_sync(_read_identity, soul, refuse)
        guidance = [
            load_text(f"guidance_{name}")
            for name in ("memory", "session_search", "skills")
            if (name == "skills" and "skill_view" in tools) or name in tools
        ]
        context = ""
        if config.prompt.context_files:
            include_soul = not (soul_used and (cwd / "SOUL.md").resolve() == soul.resolve())
            files = await anyio.to_thread.run_sync(
                lambda: discover_context_files(
                    cwd,
                    scan=_context_scan,
                    max_chars=config.prompt.context_file_max_chars,
                    include_soul=include_soul,
                )
            )
            for f in files:
                if f.refused is not None:
                    refuse(str(cwd / f.label), f.refused)
            context = render_context_files(files)
        skills_index = None if skills_pin is None else skills_pin.take()
        if skills_index is None:
            skills_index = ""
            if skills is not None and "skill_view" in tools:
                skills_index = await load_skills_index(
                    skills, load_text("skills_index"), shared=shared_skills
                )
        if skills_pin is not None:
            skills_pin.shown = skills_index
        return {
            "identity": identity,
            "tool_guidance": "\n\n".join(guidance),
            "provider": manager.system_prompt_block(),
            "system_message": config.agent.system_message,
            "skills": skills_index,
            "context_files": context,
            "session": session_line(today(), platform=config.agent.platform, model=model_name),
        }

    return gather
