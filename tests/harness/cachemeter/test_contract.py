"""The cache contract: fails with the attribution when a request breaks the prefix outside an
allowed event, passes on a frozen session."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cachemeter import CacheContractError
from harness.cachemeter.contract import AllowedEvent, cache_breaks
from harness.testing import assert_cache_stable
from harness.trace import TraceRecord, TraceSlot, record_for_request
from harness.types import Message, ModelRequest, Purpose, ToolSpec

IDENTITY = "You are keel, a careful assistant. " * 10


def rec(memory: str, n: int, *, purpose: Purpose = "turn", session: str = "s") -> TraceRecord:
    system = IDENTITY + memory
    slots = [
        TraceSlot(name="identity", start=0, end=len(IDENTITY)),
        TraceSlot(name="memory", start=len(IDENTITY), end=len(system)),
    ]
    messages = tuple(Message("user" if k % 2 == 0 else "assistant", f"message {k} " * 8) for k in range(n))
    if purpose == "summary":
        system, slots, messages = "", [], (Message("user", "summarize these turns"),)
    req = ModelRequest(
        system=system, messages=messages, tools=(ToolSpec("memory", "Save."),), purpose=purpose
    )
    return record_for_request(req, session_id=session, turn=n, model="m", slots=slots, timestamp=float(n))


def test_a_frozen_session_keeps_the_contract() -> None:
    records = [rec("MEMORY: likes tea", n) for n in (1, 3, 5, 7)]
    assert_cache_stable(records)
    assert cache_breaks(records) == []


def test_a_mid_session_system_prompt_change_fails_with_its_attribution_and_text() -> None:
    records = [
        rec("MEMORY: likes tea", 1),
        rec("MEMORY: likes tea", 3),
        rec("MEMORY: likes tea\nuses vim", 5),
    ]
    with pytest.raises(CacheContractError) as caught:
        assert_cache_stable(records)
    assert isinstance(caught.value, AssertionError)  # pytest reports it as a plain failure
    message = str(caught.value)
    assert "1 request(s) break the prompt prefix" in message
    assert "line 3 (turn request, turn 5, session s): system_changed:memory" in message
    assert "memory-write" in message
    assert "+ uses vim" in message
    (found,) = cache_breaks(records)
    assert (found.index, found.reason) == (2, "system_changed:memory")
    assert found.lost > 0


def test_one_rebuild_per_compression_is_allowed_and_a_second_is_not() -> None:
    records = [
        rec("MEMORY: likes tea", 1),
        rec("MEMORY: likes tea", 3),
        rec("", 0, purpose="summary"),
        rec("MEMORY: likes tea; uses vim", 1, session="child"),  # the compression's one rebuild
        rec("MEMORY: likes tea; uses vim", 3, session="child"),
    ]
    assert_cache_stable(records)
    again = [*records, rec("MEMORY: likes tea; uses vim; CET", 5, session="child")]
    (found,) = cache_breaks(again)
    assert found.index == 5
    assert found.reason == "system_changed:memory"
    only_new_sessions: tuple[AllowedEvent, ...] = ("new_session",)
    strict = cache_breaks(records, allow=only_new_sessions)
    assert [b.index for b in strict] == [2, 3]  # the summary call and the rebuild


def test_keels_frozen_trace_passes_and_its_live_trace_fails(keel_traces: dict[str, Path]) -> None:
    assert_cache_stable(keel_traces["frozen"])
    with pytest.raises(CacheContractError, match=r"system_changed:memory") as caught:
        assert_cache_stable(keel_traces["live"])
    assert "Working note" in str(caught.value)


def test_the_memory_only_flush_breaks_the_prefix_unless_flushes_are_allowed(
    keel_traces: dict[str, Path],
) -> None:
    found = cache_breaks(keel_traces["frozen"], allow=("compression", "new_session"))
    # the first piece of the flush changes the tool list; each later piece (the flush reads
    # the dropped turns in pieces) starts other messages after the same system prompt
    assert found and all(b.purpose == "flush" for b in found)
    assert found[0].reason == "tools_changed"
    assert all(b.reason.startswith("messages_changed") for b in found[1:])


def test_an_unknown_allowed_event_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown allowed event"):
        cache_breaks([], allow=("compaction",))  # type: ignore[arg-type]  # the mistake under test
