"""The wiring tests' compression by hand: a first turn on a topic, three long turns after it,
then one `compress()` with automatic compression off."""

from __future__ import annotations

from harness.testing import ScriptedModel, run_turn, say
from harness.wiring import OpenedSession

__all__ = ["BY_HAND", "compress_after_four_turns"]

# `config()` overrides: a small window, two protected turns, automatic compression off
BY_HAND = {
    "model__context_window": "800",
    "compression__protect_last_n": "2",
    "compression__enabled": "false",
}


async def compress_after_four_turns(
    s: OpenedSession, model: ScriptedModel, *, question: str, answer: str, filler: str
) -> tuple[str, str]:
    """Ask `question` (answered by `answer`), three more turns, then compress; the parent and
    child session ids. Every message carries `filler` so the turns are long."""
    model.extend([say(f"{answer} {filler}")])
    await run_turn(s, f"{question} {filler}")
    for i in range(3):
        model.extend([say(f"answer {i} {filler}")])
        await run_turn(s, f"question {i} {filler}")
    parent = s.session_id
    model.extend([say("Nothing to save."), say("## Goal\nchat")])
    await s.compress()
    return parent, s.session_id
