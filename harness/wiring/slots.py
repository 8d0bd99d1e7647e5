"""The static slots of a session's system prompt, gathered from its parts.

Identity (SOUL.md or the default), the guidance of the tools actually registered, the
provider's block, the caller's system message, the skills index, the project's context files
and the session line: everything but the MEMORY and USER snapshots. The loop's
`PromptAssembler` calls the gatherer at session start and at each compression rebuild; what
to read and from where is the wiring's business, so it lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import anyio
import anyio.to_thread

from harness.config import KeelConfig
from harness.loop.system_prompt import StaticSlots
from harness.tools import ToolRegistry
from memory import MemoryManager, scan
from memory.skills import SkillLibrary, load_skills_index
from prompts import (
    SlotId,
    discover_context_files,
    load_text,
    read_text_capped,
    render_context_files,
    session_line,
)

__all__ = ["SkillsPin", "static_slot_gatherer"]


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
        if tools.profile is not None and guidance:
            guidance = [load_text("guidance_local")]  # one short text written for small models
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
