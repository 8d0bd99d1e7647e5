"""One user message is bounded (`limits.max_message_chars`): a 50 MB paste is refused with a
clear error before anything is stored, sent or copied, and the session goes on."""

from __future__ import annotations

import tracemalloc

import pytest

from harness.errors import SessionError
from harness.testing import RecordingRecorder, ScriptedModel, make_session, run_turn, say


async def test_a_50_mb_message_is_refused_clearly_without_being_stored_sent_or_copied() -> None:
    model = ScriptedModel([say("fine")])
    recorder = RecordingRecorder()
    huge = "x" * (50 * 1024 * 1024)
    async with make_session(model, recorder=recorder) as s:
        tracemalloc.start()
        try:
            with pytest.raises(
                SessionError, match=r"52,428,800 characters; one message may hold at most 1,000,000"
            ):
                await run_turn(s, huge)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1024 * 1024  # nothing of the 50 MB was copied
        refused = s.transcript
        assert refused == () and model.requests == []
        assert all(not ms for ms in recorder.messages.values())
        await run_turn(s, "a normal message")  # the session goes on
        assert [m.content for m in s.transcript] == ["a normal message", "fine"]
