"""`memory.provider: semantic` end to end through `open_session`: learning with the session's
model after a turn, recall by meaning in the next session, per-user scopes, config bands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.events import RecallAttached
from harness.testing import FakeTokenizer, ScriptedModel, config, run_turn
from harness.types import ModelRequest
from harness.wiring import SessionOptions, open_session
from memory.providers.semantic import semantic_db_path
from tests.memory.providers.semantic.conftest import needs_embedder


def respond(request: ModelRequest) -> str:
    """The chat model: answers turns, and lists the fact when asked to extract."""
    if request.purpose == "extract":
        text = request.messages[-1].content
        return "- The user prefers pytest over unittest." if "pytest" in text.split("USER:")[-1] else "none"
    return "ok"


@needs_embedder
async def test_a_fact_learned_after_a_turn_is_recalled_by_meaning_in_the_next_session(
    home: Path, tmp_path: Path
) -> None:
    cfg = config(memory__provider="semantic", memory__user_id="alice")
    trace = tmp_path / "first.jsonl"
    model = ScriptedModel([respond] * 4, tokenizer=FakeTokenizer())
    async with open_session(
        cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), trace_path=trace)
    ) as s:
        await run_turn(s, "I always write my tests with pytest, never unittest.")
    # learning ran through the session's own model calls, traced with purpose "extract"
    purposes = [json.loads(line)["purpose"] for line in trace.read_text(encoding="utf-8").splitlines()]
    assert purposes == ["turn", "extract"]
    assert semantic_db_path(home, "alice").is_file()

    model = ScriptedModel([respond] * 4, tokenizer=FakeTokenizer())
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        events = await run_turn(s, "what does the user use for testing?")
    assert any(isinstance(e, RecallAttached) for e in events)
    sent = model.requests[0].messages[-1].api_content or ""
    assert "The user prefers pytest over unittest." in sent
    assert "semantic_search" in model.requests[0].system  # the static block names the tools

    # another user of the same home never sees it
    bob = config(memory__provider="semantic", memory__user_id="bob", memory__semantic__learn="false")
    model = ScriptedModel([respond] * 2, tokenizer=FakeTokenizer())
    async with open_session(bob, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "what does the user use for testing?")
    assert "pytest" not in (model.requests[0].messages[-1].api_content or "")


def test_the_config_accepts_semantic_and_validates_its_bands() -> None:
    assert config(memory__provider="semantic").memory.semantic.related_similarity == 0.5
    with pytest.raises(ConfigError, match="related_similarity"):
        config(memory__semantic__related_similarity="0.99", memory__semantic__duplicate_similarity="0.9")
