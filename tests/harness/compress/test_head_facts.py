"""Nothing said at the start forgotten: the protected head is never dropped, so the first
compression's flush reads it (issue 40 item 3). A scripted session of six turns that
compresses once and ends keeps the fact its first message stated, in USER.md."""

from __future__ import annotations

from pathlib import Path

from tests.harness.compress._chat import FILLER, chat

NTURNS = 6


def _flush(seen: str) -> str:
    return "user: Alice prefers tabs over spaces." if "tabs over spaces" in seen else "none"


async def test_a_session_that_compresses_once_and_ends_keeps_what_its_head_said(tmp_path: Path) -> None:
    lines = ["Hi, I'm Alice. I prefer tabs over spaces, always."]
    lines += [f"question {n} {FILLER}" for n in range(1, NTURNS)]
    model = await chat(tmp_path, lines, _flush)
    flushes = [r for r in model.requests if r.purpose == "flush"]
    summaries = [r for r in model.requests if r.purpose == "summary"]
    assert len(summaries) == 1  # compressed once
    # the head (turn 1) was never dropped, yet the first flush read it
    assert "tabs over spaces" not in summaries[0].messages[0].content
    assert any("tabs over spaces" in m.content for r in flushes for m in r.messages)
    assert "Alice prefers tabs over spaces." in (tmp_path / "memories" / "USER.md").read_text(
        encoding="utf-8"
    )


async def test_a_later_flush_does_not_read_the_last_checkpoint_again(tmp_path: Path) -> None:
    model = await chat(tmp_path, [f"question {n} {FILLER}" for n in range(16)], _flush)
    assert len([r for r in model.requests if r.purpose == "summary"]) >= 2  # compressed twice or more
    flushes = [r for r in model.requests if r.purpose == "flush"]
    assert flushes
    assert not any(m.summary for r in flushes for m in r.messages)
