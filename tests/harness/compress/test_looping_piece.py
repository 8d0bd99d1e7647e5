"""A flush piece whose reply goes round in a loop ("user: none" / "memory: none" to the output
cap, as Qwen2.5-Coder-1.5B did on a piece mixing three conversations) is asked again once,
in two halves, and the facts of both halves are kept (issue 40)."""

from __future__ import annotations

from pathlib import Path

from harness.compress.flush import halves, looping
from harness.types import Message
from tests.harness.compress._chat import FILLER, chat

LOOP = "user: none\nmemory: none\n" * 12


def _flush(seen: str) -> str:
    bees, lisbon = "bees" in seen, "Lisbon" in seen
    if bees and lisbon:
        return LOOP  # both in one piece: the model goes round in circles
    if bees:
        return "user: Alice keeps bees on her roof."
    return "user: Alice lives in Lisbon." if lisbon else "none"


async def test_a_looping_piece_is_read_again_in_halves_and_keeps_both_facts(tmp_path: Path) -> None:
    lines = ["Hi, I'm Alice. I keep bees on my roof.", f"question 1 {FILLER}", "I live in Lisbon."]
    model = await chat(tmp_path, [*lines, *(f"question {n} {FILLER}" for n in range(3, 6))], _flush)
    flushes = [r for r in model.requests if r.purpose == "flush"]
    both = [r for r in flushes if sum("bees" in m.content or "Lisbon" in m.content for m in r.messages) == 2]
    assert len(both) == 1  # asked once with both, then in halves
    user = (tmp_path / "memories" / "USER.md").read_text(encoding="utf-8")
    assert "Alice keeps bees on her roof." in user
    assert "Alice lives in Lisbon." in user


def test_a_loop_is_many_lines_with_hardly_any_new() -> None:
    assert looping(LOOP)
    assert not looping("none")
    assert not looping("\n".join(f"user: fact {n}" for n in range(12)))


def test_halves_cut_between_whole_turns() -> None:
    turns = [Message(role="user", content=f"q{n}") for n in range(3)]
    piece = [turns[0], Message(role="assistant", content="a0"), turns[1], turns[2]]
    first, second = halves(piece)
    assert [m.content for m in first] == ["q0", "a0"]
    assert [m.content for m in second] == ["q1", "q2"]
    assert halves(piece[:2]) == [tuple(piece[:2])]
