"""The local-chat benchmark's counting: empty replies are found in a turn's events."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from harness.events import Event, TextDelta, ToolCallStarted, ToolResultReady, TurnEnded, UsageReported
from harness.types import Purpose

REPO = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("local_chat", REPO / "benchmarks" / "local_chat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["local_chat"] = module
    spec.loader.exec_module(module)
    return module


def usage(purpose: Purpose = "turn") -> UsageReported:
    return UsageReported(
        purpose=purpose, input=10, output=0, cache_read=0, cache_write=0, reported=True, latency_s=1.0
    )


def test_replies_with_no_text_and_no_call_are_counted_and_others_are_not() -> None:
    empty_replies = _bench().empty_replies
    end = TurnEnded(final_text="", iterations=1, stop_reason="final")
    call = ToolCallStarted(call_id="c", name="memory", arguments="{}")
    result = ToolResultReady(call_id="c", name="memory", content="ok", is_error=False)
    turns: list[tuple[list[Event], int]] = [
        ([TextDelta("hi"), usage(), end], 0),  # an answer
        ([usage(), call, result, TextDelta("done"), usage(), end], 0),  # a call, then an answer
        ([usage(), TextDelta("held then shown"), end], 0),  # text released after the report
        ([usage(), TextDelta("answer"), usage(), end], 1),  # empty, asked again, answered
        ([usage(), usage(), end], 2),  # empty twice
        ([usage(), usage("flush"), TextDelta("x"), end], 0),  # another purpose's report is no reply
    ]
    for events, expected in turns:
        assert empty_replies(events) == expected, events


async def test_a_turn_calling_another_tool_than_it_needs_counts_as_wrong_tool() -> None:
    from harness.testing import ScriptedModel, call_tool, make_session, say
    from harness.tools import RawTool, ToolOutput
    from harness.types import ToolSpec

    async def ok(_: str) -> ToolOutput:
        return ToolOutput("18 °C", False)

    weather = RawTool(ToolSpec("weather", "The weather.", {"type": "object"}), ok)
    bench = _bench()
    tally = bench.Tally(deadline=float("inf"))
    model = ScriptedModel([call_tool("weather", {}), say("Mild."), say(""), say("")])  # empty, asked again
    async with make_session(model, extra_tools=[weather]) as session:
        await tally.turn(session, "remember my name", "memory")
        await tally.turn(session, "and?", None)
    c = tally.counts
    assert (c["turns_needing_a_tool"], c["needed_tool_called"], c["wrong_tool"]) == (1, 0, 1)
    assert c["valid_tool_calls"] == 1 and c["unanswered"] >= 1
