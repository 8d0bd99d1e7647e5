"""The memory review: every `compression.review_interval` turns, one memory-only call in the
background that saves what it reads; `Session.review_memory` runs one now."""

from __future__ import annotations

from pathlib import Path

from harness.models.scripted import ReplyLike
from harness.testing import FakeTokenizer, ScriptedModel, config, respond, run_turn, say
from harness.types import ModelRequest
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
