"""A flush piece whose reply goes round in a loop ("user: none" / "memory: none" to the output
cap, as Qwen2.5-Coder-1.5B did on a piece mixing three conversations) is asked again once,
in two halves, and the facts of both halves are kept (issue 40)."""

from __future__ import annotations

from pathlib import Path

from harness.compress.flush import halves, looping
from harness.models.scripted import ReplyLike
from harness.testing import FakeTokenizer, ScriptedModel, config, respond, run_turn, say
from harness.types import Message, ModelRequest
from harness.wiring import SessionOptions, open_session

FILLER = " ".join(["word"] * 60)
LOOP = "user: none\nmemory: none\n" * 12


def _reply(request: ModelRequest) -> ReplyLike:
    if request.purpose == "flush":
        seen = "\n".join(m.content for m in request.messages[:-1])
        bees, lisbon = "bees" in seen, "Lisbon" in seen
        if bees and lisbon:
            return say(LOOP)  # both in one piece: the model goes round in circles
        if bees:
            return say("user: Alice keeps bees on her roof.")
        return say("user: Alice lives in Lisbon." if lisbon else "none")
    if request.purpose == "summary":
        return say("## Goal\nchat")
    return say(f"answer {FILLER}")


async def test_a_looping_piece_is_read_again_in_halves_and_keeps_both_facts(tmp_path: Path) -> None:
    cfg = config(
        model__context_window="2000",
        compression__protect_last_n="2",
        compression__flush_chunk_tokens="512",
        session_search__enabled="false",
    )
    model = ScriptedModel([respond(_reply)] * 60, tokenizer=FakeTokenizer())
    options = SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())
    async with open_session(cfg, options) as s:
        await run_turn(s, "Hi, I'm Alice. I keep bees on my roof.")
        await run_turn(s, f"question 1 {FILLER}")
        await run_turn(s, "I live in Lisbon.")
        for n in range(3, 6):
            await run_turn(s, f"question {n} {FILLER}")
    flushes = [r for r in model.requests if r.purpose == "flush"]
    looped = [
        r
        for r in flushes
        if len([m for m in r.messages if "bees" in m.content or "Lisbon" in m.content]) == 2
    ]
    assert len(looped) == 1  # asked once with both, never again
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
