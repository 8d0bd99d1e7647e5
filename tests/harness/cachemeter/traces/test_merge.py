"""Several traces as one: interleaved by time, sessions of different files kept apart."""

from __future__ import annotations

from harness.cachemeter import MeterMessage, MeterRequest, interleave


def _req(t: float | None, session: str | None, text: str) -> MeterRequest:
    return MeterRequest(
        kind="chat", model="m", messages=(MeterMessage("user", text),), timestamp=t, session_id=session
    )


def test_requests_are_ordered_by_time_and_sessions_prefixed_by_their_trace() -> None:
    a = [_req(1.0, "s", "a1"), _req(3.0, "s", "a2"), _req(None, "s", "a3")]  # a3 keeps a2's time
    b = [_req(2.0, None, "b1"), _req(3.0, "t", "b2")]
    merged = interleave([("a", a), ("b", b)])
    assert [r.messages[0].content for r in merged] == ["a1", "b1", "a2", "a3", "b2"]
    assert [r.session_id for r in merged] == ["a/s", "b", "a/s", "a/s", "b/t"]


def test_a_single_trace_keeps_its_session_ids() -> None:
    a = [_req(2.0, "s", "x"), _req(1.0, None, "y")]
    assert [r.session_id for r in interleave([("a", a)])] == [None, "s"]
