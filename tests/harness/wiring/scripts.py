"""`saves_then`: a scripted model whose first reply adds to memory (a helper, not collected)."""

from __future__ import annotations

from harness.testing import ScriptedModel, call_tool, say
from memory import MemoryTarget

__all__ = ["saves_then"]


def saves_then(target: MemoryTarget, content: str, *replies: str) -> ScriptedModel:
    """A model that first calls the memory tool to add `content` to `target`, then says `replies`."""
    add = call_tool("memory", {"action": "add", "target": target, "content": content})
    return ScriptedModel([add, *(say(r) for r in replies)])
