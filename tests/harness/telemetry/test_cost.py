"""What one more request costs export-on does not grow with the conversation's history.

Counted in Python function calls (cProfile's deterministic count, not a clock): recording the
request on the turn loop, and turning it into a span with its cache verdict on the worker.
Each request of a stream repeats its history, so a step that walks the history per request
(converting, rendering, attributing every message again) adds a thousand calls at a
thousand messages.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable

import pytest

from harness.telemetry.port import RequestInfo
from harness.types import Message, ModelReply, ModelRequest, ToolCall, Usage
from tests.harness.telemetry.conftest import make_captured


def _history(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n // 4):
        call = ToolCall(f"c{i}", "session_search", '{"query": "rows"}')
        out += [
            Message("user", f"Question {i}: what about batch {i}?"),
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", '{"results": []}', tool_call_id=call.id, name="session_search"),
            Message("assistant", f"Answer {i}: quarantine the row."),
        ]
    return out


def _calls(work: Callable[[], object]) -> int:
    profile = cProfile.Profile()
    profile.runcall(work)
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined, no-any-return]  # set by the stats, untyped


def _calls_for_next_request(history: int, provider: str) -> tuple[int, int]:
    """Calls spent on the loop and on the worker for a stream's next request over `history` messages."""
    captured = make_captured(simulators={"anthropic": "anthropic"})
    telemetry = captured.export.telemetry
    messages = _history(history)
    usage = Usage(input=5, output=1)
    info = RequestInfo(
        model="m", provider=provider, conversation_id="c", session_id="s", compacted=False, stream="s"
    )

    def request() -> None:
        sent = ModelRequest(system="You are keel.", messages=tuple(messages))
        with telemetry.turn(conversation_id="c", session_id="s", turn=1) as turn:
            with telemetry.request(sent, info) as span:
                span.replied(
                    ModelReply(Message("assistant", "ok"), usage=usage), usage, reported=True, slots=()
                )
            turn.ended(stop_reason="final", iterations=1)

    try:
        request()
        captured.export.exporter.drain()  # the stream's first request renders all of it
        messages += [Message("assistant", "ok"), Message("user", "next")]
        return _calls(request), _calls(captured.export.exporter.drain)
    finally:
        captured.export.close()


@pytest.mark.parametrize("provider", ["anthropic", "scripted"])
def test_a_requests_cost_on_the_loop_and_the_worker_does_not_grow_with_the_history(provider: str) -> None:
    short_loop, short_worker = _calls_for_next_request(12, provider)
    long_loop, long_worker = _calls_for_next_request(1000, provider)
    assert long_loop == short_loop
    # a few calls of slack for a simulator's block bookkeeping; a walk of the history adds ~1,000
    assert long_worker <= short_worker + 50, (short_worker, long_worker)
