"""System-prompt slots: their ids, the default order, and the assembled result.

The system prompt is the *frozen prefix* of every request: built once per session from
these slots and replayed byte-for-byte until a compression or session switch rebuilds it.
`SystemPrompt.slots` is the slot map — where each slot's text sits, in characters and in
tokens — so the cache meter can name the slot that changed when a prefix breaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

__all__ = ["DEFAULT_SLOT_ORDER", "SLOT_IDS", "SlotId", "SlotSpan", "SystemPrompt"]

SlotId: TypeAlias = Literal[
    "identity",
    "tool_guidance",
    "provider",
    "system_message",
    "memory",
    "user",
    "skills",
    "context_files",
    "session",
]

DEFAULT_SLOT_ORDER: tuple[SlotId, ...] = get_args(SlotId)  # the order the Literal lists them in
SLOT_IDS: frozenset[SlotId] = frozenset(DEFAULT_SLOT_ORDER)


@dataclass(frozen=True, slots=True)
class SlotSpan:
    """One slot's place in the system prompt. Empty slots have `start == end`."""

    name: SlotId
    start: int
    end: int
    token_start: int | None = None
    token_end: int | None = None


@dataclass(frozen=True, slots=True)
class SystemPrompt:
    """The assembled frozen prefix and its slot map."""

    text: str
    slots: tuple[SlotSpan, ...]

    def span(self, name: SlotId) -> SlotSpan | None:
        for s in self.slots:
            if s.name == name:
                return s
        return None

    def slot_text(self, name: SlotId) -> str:
        s = self.span(name)
        return "" if s is None else self.text[s.start : s.end]

    def slot_at(self, char_offset: int) -> SlotId | None:
        """The slot a character offset belongs to.

        The separator after a slot belongs to that slot, and an offset at or past the end of
        the text belongs to the last slot: text appended to a slot first differs there.
        """
        owner: SlotId | None = None
        for s in self.slots:
            if s.end == s.start:
                continue
            if char_offset < s.start:
                break
            owner = s.name
        return owner
