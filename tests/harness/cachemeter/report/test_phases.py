"""Per-phase figures: steady state, side calls, and what each compression costs the cache."""

from __future__ import annotations

import json

from harness.cachemeter import CanonicalRenderer, MeterReport, measure
from harness.cachemeter.report._phases import PHASES
from harness.tokens import CharTokenizer
from harness.trace import TraceRecord, record_for_request
from harness.types import Message, ModelRequest, Purpose, ToolSpec

TOOLS = (ToolSpec("memory", "Save a durable fact."), ToolSpec("search", "Search past sessions."))
BEFORE = "You are keel. " * 30 + "MEMORY: likes tea"
AFTER = "You are keel. " * 30 + "MEMORY: likes tea; uses vim"


def history(n: int) -> tuple[Message, ...]:
    return tuple(Message("user" if k % 2 == 0 else "assistant", f"message {k} " * 12) for k in range(n))


def rec(
    system: str,
    messages: tuple[Message, ...],
    *,
    purpose: Purpose = "turn",
    session: str = "s",
    tools: tuple[ToolSpec, ...] = TOOLS,
) -> TraceRecord:
    req = ModelRequest(system=system, messages=messages, tools=tools, purpose=purpose)
    return record_for_request(req, session_id=session, turn=len(messages), model="m", timestamp=0.0)


def compressed_session(*, flush_tools: tuple[ToolSpec, ...] = TOOLS, after: int = 3) -> list[TraceRecord]:
    """Four growing turns, a flush and a summary, then `after` turns of the child session."""
    records = [rec(BEFORE, history(2 * k + 1)) for k in range(4)]
    records.append(
        rec(BEFORE, (*history(8), Message("user", "flush note")), purpose="flush", tools=flush_tools)
    )
    records.append(rec("", (Message("user", "summarize: " + "x " * 50),), purpose="summary", tools=()))
    summary = Message("user", "summary of earlier turns " * 5)
    records += [rec(AFTER, (summary, *history(2 * k + 1)), session="child") for k in range(after)]
    return records


def meter(records: list[TraceRecord]) -> MeterReport:
    return measure(records, CanonicalRenderer(CharTokenizer()), simulators=("ideal", "vllm", "llamacpp"))


def test_every_request_falls_in_one_phase_and_the_phases_add_up() -> None:
    report = meter(compressed_session())
    phases = report.phases
    assert phases.assignment == (
        "cold", "steady", "steady", "steady", "flush", "summary", "rewarm", "steady", "steady",
    )  # fmt: skip
    assert set(phases.phases) == set(PHASES)
    assert sum(t.requests for t in phases.phases.values()) == len(report.requests)
    assert sum(t.prompt_tokens for t in phases.phases.values()) == sum(
        r.prompt_tokens for r in report.requests
    )
    steady = [r for r, p in zip(report.requests, phases.assignment, strict=True) if p == "steady"]
    assert phases.phases["steady"].reusable["vllm"] == sum(r.sims["vllm"].reusable for r in steady)
    assert phases.phases["steady"].hit_ratio("ideal") > 0.7
    assert phases.phases["rewarm"].hit_ratio("llamacpp") == 0.0  # the one slot held the summary call


def test_a_compression_that_rebuilds_once_costs_one_rewarm_request() -> None:
    report = meter(compressed_session())
    (c,) = report.phases.compressions
    assert (c.requests, c.flush, c.summary) == ((4, 5), 1, 1)
    for sim in ("ideal", "vllm", "llamacpp"):
        assert c.rewarm[sim] == 1
        assert c.breaks[sim] == 2  # the summary call and the first turn after it
    first_after = report.requests[6]
    assert c.rewarm_lost["llamacpp"] == first_after.prompt_tokens
    assert c.rewarm_lost["ideal"] == first_after.prompt_tokens - first_after.sims["ideal"].reusable


def test_a_flush_with_other_tools_adds_a_break_that_a_cache_safe_flush_does_not() -> None:
    safe = meter(compressed_session()).phases.compressions[0]
    memory_only = meter(compressed_session(flush_tools=TOOLS[:1])).phases.compressions[0]
    assert memory_only.breaks["ideal"] == safe.breaks["ideal"] + 1
    flush_ratio = meter(compressed_session(flush_tools=TOOLS[:1])).phases.phases["flush"].hit_ratio("vllm")
    assert flush_ratio < 0.1  # only the first tool's bytes are shared
    assert meter(compressed_session()).phases.phases["flush"].hit_ratio("vllm") > 0.8


def test_a_compression_at_the_end_of_the_trace_is_not_back_to_steady() -> None:
    report = meter(compressed_session(after=1))
    (c,) = report.phases.compressions
    assert c.rewarm["ideal"] is None
    assert c.rewarm_lost["ideal"] > 0


def test_a_break_outside_a_compression_counts_in_the_steady_state() -> None:
    records = [
        rec(BEFORE, history(1)),
        rec(BEFORE, history(3)),
        rec(AFTER, history(5)),
        rec(AFTER, history(7)),
    ]
    report = meter(records)
    assert report.phases.assignment == ("cold", "steady", "steady", "steady")
    assert report.phases.compressions == ()
    assert report.phases.phases["steady"].hit_ratio("ideal") < 0.9


def test_phases_and_compressions_are_in_the_json_report() -> None:
    data = json.loads(json.dumps(meter(compressed_session()).to_json()))
    assert set(data["phases"]) == set(PHASES)
    assert set(data["phases"]["steady"]) == {"requests", "prompt_tokens", "sims"}
    assert set(data["phases"]["steady"]["sims"]["vllm"]) == {"reusable", "hit_ratio"}
    (c,) = data["compressions"]
    assert (c["index"], c["requests"], c["flush"], c["summary"]) == (0, [4, 5], 1, 1)
    assert (c["sims"]["llamacpp"]["rewarm"], c["sims"]["llamacpp"]["breaks"]) == (1, 2)
    assert c["sims"]["llamacpp"]["rewarm_lost"] > 0
    assert data["notices"] == []
