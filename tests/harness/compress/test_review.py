"""The memory review: every `compression.review_interval` turns, one memory-only call in the
background that saves what it reads; `Session.review_memory` runs one now."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from harness.compress.review import recent_turns
from harness.models.scripted import ReplyLike
from harness.testing import FakeTokenizer, ScriptedModel, config, respond, run_turn, say
from harness.types import Message, ModelRequest
from harness.wiring import SessionOptions, open_session
from memory import MEMORY_TOOL_NAME


def _reply(request: ModelRequest) -> ReplyLike:
    if request.purpose == "flush":
        return say("user: The user's name is Sam.")
    return say("Noted.")


async def test_a_review_runs_in_the_background_every_interval_turns_and_saves(tmp_path: Path) -> None:
    model = ScriptedModel([respond(_reply)] * 20)
    cfg = config(compression__review_interval="2", session_search__enabled="false", skills__enabled="false")
    async with open_session(cfg, SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "Hi, I'm Sam.")
        await run_turn(s, "I use vim.")
        await run_turn(s, "Thanks.")
    reviews = [r for r in model.requests if r.purpose == "flush"]
    assert len(reviews) == 1  # after turn 2 only
    review = reviews[0]
    assert "periodic memory review" in review.messages[-1].content
    assert [t.name for t in review.tools] == [MEMORY_TOOL_NAME]
    assert "The user's name is Sam." in (tmp_path / "memories" / "USER.md").read_text(encoding="utf-8")


async def test_without_an_interval_no_review_runs_but_one_can_be_asked_for(tmp_path: Path) -> None:
    model = ScriptedModel([respond(_reply)] * 20)
    cfg = config(session_search__enabled="false", skills__enabled="false")
    async with open_session(cfg, SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "Hi, I'm Sam.")
        await run_turn(s, "I use vim.")
        assert not any(r.purpose == "flush" for r in model.requests)
        outcome = await s.review_memory()
    assert outcome is not None and [e.content for e in outcome.saved] == ["The user's name is Sam."]


async def test_each_review_reads_only_the_turns_since_the_previous_one(tmp_path: Path) -> None:
    model = ScriptedModel([respond(_reply)] * 20)
    cfg = config(compression__review_interval="2", session_search__enabled="false", skills__enabled="false")
    async with open_session(cfg, SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())) as s:
        for text in ("Hi, I'm Sam.", "I use vim.", "I deploy on Fridays.", "Thanks."):
            await run_turn(s, text)
    reviews = [r for r in model.requests if r.purpose == "flush"]
    assert len(reviews) == 2
    read = [" ".join(m.content for m in r.messages[:-1]) for r in reviews]
    assert "Sam" in read[0] and "vim" in read[0] and "Fridays" not in read[0]
    assert "Fridays" in read[1] and "Thanks" in read[1] and "Sam" not in read[1] and "vim" not in read[1]


async def test_a_chunked_review_sends_its_turns_in_pieces(tmp_path: Path) -> None:
    model = ScriptedModel([respond(_reply)] * 20)
    cfg = config(
        compression__flush_chunk_tokens="64", session_search__enabled="false", skills__enabled="false"
    )
    long = " ".join(["word"] * 40)  # each turn is over half the budget: one turn per piece
    async with open_session(cfg, SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())) as s:
        for n in range(3):
            await run_turn(s, f"Turn {n} {long}")
        outcome = await s.review_memory(turns=2)
    reviews = [r for r in model.requests if r.purpose == "flush"]
    assert [r.messages[0].content.split()[:2] for r in reviews] == [["Turn", "1"], ["Turn", "2"]]
    assert all(len(r.messages) == 3 for r in reviews)  # one turn (user, assistant) and the note
    # each piece's reply is checked against that piece: the name was never said in them
    assert outcome is not None and len(outcome.entries) == 2 and not outcome.saved


def test_recent_turns_starts_at_the_nth_last_user_message() -> None:
    roles: list[Literal["user", "assistant"]] = ["user", "assistant"] * 3
    msgs = [Message(role=r, content=str(n)) for n, r in enumerate(roles)]
    assert [m.content for m in recent_turns(msgs, 2)] == ["2", "3", "4", "5"]
    assert recent_turns(msgs, 0) == msgs and recent_turns(msgs, 9) == msgs
