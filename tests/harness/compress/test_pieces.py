"""The system prompt of a flush in pieces: the note-taker's for `memory_only` (no memory
block to copy back), the session's own where the flush keeps the cached prefix."""

from __future__ import annotations

from harness.testing import (
    FakeMemory,
    FakeTokenizer,
    ScriptedModel,
    config,
    make_session,
    respond,
    run_turn,
    say,
)
from harness.types import Message, ModelReply, ModelRequest, Usage
from prompts import load_text

LONG = " ".join(["word"] * 60)  # 60 fake tokens
KNOWN = "The user keeps bees on the roof"


def _small_window(**extra: str) -> dict[str, str]:
    # as in test_run.py: four filled turns stay under the threshold, the fifth crosses it
    return {"model__context_window": "800", "compression__protect_last_n": "2", **extra}


def _none(_: ModelRequest) -> ModelReply:
    return ModelReply(message=Message(role="assistant", content="none"), usage=Usage(1, 1))


async def _flush_requests(**settings: str) -> tuple[list[ModelRequest], list[ModelRequest]]:
    """Fill a session whose memory holds KNOWN until it compresses; its turn and flush requests."""
    memory = FakeMemory(entries=[KNOWN])
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(model, cfg=config(**_small_window(**settings)), memory=memory) as s:
        for i in range(4):
            model.extend([say(f"answer {i} {LONG}")])
            await run_turn(s, f"question {i} {LONG}")
        model.extend([respond(_none)] * 8 + [say("## Goal\nchat"), say("final")])
        await run_turn(s, f"last {LONG}")
    turns = [r for r in model.requests if r.purpose == "turn"]
    flushes = [r for r in model.requests if r.purpose == "flush"]
    return turns, flushes


async def test_memory_only_pieces_go_with_the_note_takers_system_prompt_without_the_memory_block() -> None:
    turns, flushes = await _flush_requests(
        compression__flush="memory_only", compression__flush_chunk_tokens="150"
    )
    assert KNOWN in turns[0].system  # the session's prompt holds the memory block
    assert len(flushes) >= 2
    for r in flushes:
        assert r.system == load_text("flush_system")
        assert KNOWN not in r.system
        assert r.stable_prefix_chars == len(r.system)


async def test_a_whole_transcript_flush_and_a_cache_keeping_one_send_the_sessions_system_prompt() -> None:
    for settings in (
        {"compression__flush": "memory_only", "compression__flush_chunk_tokens": "0"},
        {"compression__flush": "cache_safe", "compression__flush_chunk_tokens": "150"},
    ):
        turns, flushes = await _flush_requests(**settings)
        assert flushes, settings
        assert all(r.system == turns[-1].system for r in flushes), settings
        assert all(KNOWN in r.system for r in flushes), settings
