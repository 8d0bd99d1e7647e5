"""Miss attribution: each kind of prompt break is named at the right place."""

from __future__ import annotations

import dataclasses

from harness.cachemeter import (
    CanonicalRenderer,
    MeterReport,
    MeterRequest,
    SimName,
    measure,
    request_from_record,
)
from harness.tokens import CharTokenizer
from harness.trace import TraceBreakpoint, TraceRecord, TraceSlot, record_for_request
from harness.types import Message, ModelRequest, Purpose, ToolSpec

IDENTITY = "You are keel, a careful assistant who keeps the prompt stable. " * 30
TOOLS = (
    ToolSpec("memory", "Save durable facts about the user.", {"type": "object"}),
    ToolSpec("session_search", "Search earlier sessions.", {"type": "object"}),
)
HISTORY = tuple(
    Message("user" if k % 2 == 0 else "assistant", f"message number {k} " + "words " * 60) for k in range(8)
)


def record(
    *,
    messages: tuple[Message, ...] = HISTORY[:5],
    memory: str = "MEMORY\nuser likes tea\n" * 10,
    tools: tuple[ToolSpec, ...] = TOOLS,
    model: str = "claude-sonnet-4-5",
    purpose: Purpose = "turn",
    timestamp: float = 0.0,
    breakpoints: tuple[TraceBreakpoint, ...] = (),
) -> TraceRecord:
    system = IDENTITY + memory
    slots = [
        TraceSlot(name="identity", start=0, end=len(IDENTITY)),
        TraceSlot(name="memory", start=len(IDENTITY), end=len(system)),
    ]
    req = ModelRequest(system=system, messages=messages, tools=tools, purpose=purpose)
    return record_for_request(
        req, session_id="s", turn=0, model=model, slots=slots, timestamp=timestamp, breakpoints=breakpoints
    )


def run(*records: TraceRecord, sims: tuple[SimName, ...] = ("ideal", "vllm", "llamacpp")) -> MeterReport:
    return measure(list(records), CanonicalRenderer(CharTokenizer()), simulators=sims)


def labels(report: MeterReport, index: int) -> dict[str, str]:
    return {name: s.reason.label for name, s in report.requests[index].sims.items()}


def test_the_first_request_is_a_first_request() -> None:
    report = run(record())
    assert report.requests[0].content.label == "first_request"
    assert set(labels(report, 0).values()) == {"first_request"}


def test_changing_only_the_memory_slot_is_system_changed_memory() -> None:
    report = run(record(), record(memory="MEMORY\nuser likes coffee\n" * 10))
    assert report.requests[1].content.label == "system_changed:memory"
    assert labels(report, 1) == dict.fromkeys(("ideal", "vllm", "llamacpp"), "system_changed:memory")
    # Reuse stops inside the memory slot: the identity slot and the tools were reused.
    assert report.requests[1].sims["ideal"].reusable > len(IDENTITY) // 4


def test_changing_a_tool_description_is_tools_changed() -> None:
    changed = (dataclasses.replace(TOOLS[0], description="Save facts."), TOOLS[1])
    report = run(record(), record(tools=changed))
    assert report.requests[1].content.label == "tools_changed"


def test_changing_the_model_is_model_changed() -> None:
    report = run(record(), record(model="claude-opus-4-1"))
    assert report.requests[1].content.label == "model_changed"
    assert report.requests[1].sims["vllm"].reusable == 0


def test_editing_message_3_is_messages_changed_3() -> None:
    edited = (*HISTORY[:3], Message("assistant", "an edited reply"), *HISTORY[4:6])
    report = run(record(messages=HISTORY[:6]), record(messages=edited))
    assert report.requests[1].content.label == "messages_changed:3"


def test_message_indices_count_the_lifted_system_messages_of_chat_lines() -> None:
    base = request_from_record(record(messages=HISTORY[:6]))
    edited = dataclasses.replace(
        base, messages=(*base.messages[:3], dataclasses.replace(base.messages[3], content="x"))
    )
    lifted = [dataclasses.replace(r, message_base=1) for r in (base, edited)]
    report = measure(lifted, CanonicalRenderer(CharTokenizer()), simulators=("ideal",))
    assert report.requests[1].content.label == "messages_changed:4"


def test_appending_only_is_no_break() -> None:
    report = run(record(messages=HISTORY[:4]), record(messages=HISTORY[:6]))
    assert report.requests[1].content.label == "none"
    assert labels(report, 1)["ideal"] == "none"
    assert labels(report, 1)["llamacpp"] == "none"


def test_a_side_request_does_not_break_the_turn_that_follows() -> None:
    turn = record(messages=HISTORY[:4])
    flush = record(
        messages=(*HISTORY[:4], Message("user", "flush note " * 20)), tools=TOOLS[:1], purpose="flush"
    )
    after = record(messages=HISTORY[:6])
    report = run(turn, flush, after)
    assert report.requests[1].content.label == "tools_changed"  # the flush changed the tool list
    assert report.requests[2].content.label == "none"  # the turn continues the first request
    assert labels(report, 2)["ideal"] == "none"
    assert labels(report, 2)["llamacpp"] == "evicted"  # the one slot now holds the flush


def test_vllm_loses_the_partial_block_to_block_rounding() -> None:
    report = run(record(messages=HISTORY[:4]), record(messages=HISTORY[:6]))
    vllm = report.requests[1].sims["vllm"]
    assert vllm.reason.label == "block_rounding"
    assert 0 < vllm.reason.lost < 16


def test_openai_reports_an_idle_gap_as_ttl_expired() -> None:
    report = run(
        record(timestamp=0.0), record(messages=HISTORY[:6], timestamp=3600.0), sims=("ideal", "openai")
    )
    assert labels(report, 1)["openai"] == "ttl_expired"


def test_anthropic_reports_a_too_short_shared_prefix_as_below_minimum() -> None:
    short = record(messages=HISTORY[:1], memory="m")
    report = run(short, short, sims=("ideal", "anthropic"))
    assert report.requests[1].sims["ideal"].reusable > 0
    assert labels(report, 1)["anthropic"] == "below_minimum"


def test_anthropic_hits_with_breakpoints_on_the_system_prompt_and_the_last_messages() -> None:
    def marks(count: int) -> tuple[TraceBreakpoint, ...]:
        return (
            TraceBreakpoint(at="system"),
            TraceBreakpoint(at="message", index=count - 3),
            TraceBreakpoint(at="message", index=count - 1),
        )

    memory = "MEMORY\n" + "a durable fact " * 300  # well past the 1,024-token minimum
    first = record(messages=HISTORY[:4], memory=memory, breakpoints=marks(4))
    second = record(messages=HISTORY[:6], memory=memory, breakpoints=marks(6), timestamp=30.0)
    report = run(first, second, sims=("ideal", "anthropic"))
    anth = report.requests[1].sims["anthropic"]
    assert anth.reusable == report.requests[1].sims["ideal"].reusable  # read at message 3, where #0 wrote
    assert anth.write == report.requests[1].prompt_tokens - anth.reusable
    assert anth.reason.label == "none"


def test_meter_accepts_normalized_requests_too() -> None:
    reqs: list[MeterRequest] = [request_from_record(record()), request_from_record(record())]
    report = measure(reqs, CanonicalRenderer(CharTokenizer()), simulators=("ideal",))
    assert report.requests[1].sims["ideal"].reusable == report.requests[1].prompt_tokens
