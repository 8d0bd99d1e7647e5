"""Nothing said at the start forgotten: the protected head is never dropped, so the first
compression's flush reads it (issue 40 item 3). A scripted session of six turns that
compresses once and ends keeps the fact its first message stated, in USER.md."""

from __future__ import annotations

from pathlib import Path

from harness.models.scripted import ReplyLike
from harness.testing import FakeTokenizer, ScriptedModel, config, respond, run_turn, say
from harness.types import ModelRequest
from harness.wiring import SessionOptions, open_session

NTURNS = 6
FILLER = " ".join(["word"] * 60)


def _reply(request: ModelRequest) -> ReplyLike:
    if request.purpose == "flush":
        seen = "\n".join(m.content for m in request.messages)
        return say("user: Alice prefers tabs over spaces." if "tabs over spaces" in seen else "none")
    if request.purpose == "summary":
        return say("## Goal\nchat")
    return say(f"answer {FILLER}")


async def test_a_session_that_compresses_once_and_ends_keeps_what_its_head_said(tmp_path: Path) -> None:
    cfg = config(
        model__context_window="2000",
        compression__protect_last_n="2",
        compression__flush_chunk_tokens="512",  # the default flush: in pieces
        session_search__enabled="false",
    )
    model = ScriptedModel([respond(_reply)] * 40, tokenizer=FakeTokenizer())
    options = SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())
    async with open_session(cfg, options) as s:
        await run_turn(s, "Hi, I'm Alice. I prefer tabs over spaces, always.")
        for n in range(1, NTURNS):
            await run_turn(s, f"question {n} {FILLER}")
    flushes = [r for r in model.requests if r.purpose == "flush"]
    summaries = [r for r in model.requests if r.purpose == "summary"]
    assert len(summaries) == 1  # compressed once
    # the head (turn 1) was never dropped, yet the first flush read it
    assert "tabs over spaces" not in summaries[0].messages[0].content
    assert any("tabs over spaces" in m.content for r in flushes for m in r.messages)
    assert "Alice prefers tabs over spaces." in (tmp_path / "memories" / "USER.md").read_text(
        encoding="utf-8"
    )
