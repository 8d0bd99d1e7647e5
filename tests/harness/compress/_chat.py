"""A real session on a scripted model that compresses in a small window: the flush replies
come from a function of what the piece shows, the summary and the turns are fixed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from harness.models.scripted import ReplyLike
from harness.testing import FakeTokenizer, ScriptedModel, config, respond, run_turn, say
from harness.types import ModelRequest
from harness.wiring import SessionOptions, open_session

FILLER = " ".join(["word"] * 60)


async def chat(tmp_path: Path, lines: Sequence[str], flush: Callable[[str], str]) -> ScriptedModel:
    """Say `lines` in one session (window 2,000, flush in pieces of 512); `flush(seen)` is the
    flush's reply to a piece showing `seen` (its messages, the note aside)."""

    def reply(request: ModelRequest) -> ReplyLike:
        if request.purpose == "flush":
            return say(flush("\n".join(m.content for m in request.messages[:-1])))
        if request.purpose == "summary":
            return say("## Goal\nchat")
        return say(f"answer {FILLER}")

    cfg = config(
        model__context_window="2000",
        compression__protect_last_n="2",
        compression__flush_chunk_tokens="512",  # the default flush: in pieces
        session_search__enabled="false",
    )
    model = ScriptedModel([respond(reply)] * 60, tokenizer=FakeTokenizer())
    options = SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())
    async with open_session(cfg, options) as s:
        for line in lines:
            await run_turn(s, line)
    return model
