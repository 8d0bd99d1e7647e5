"""The cut: never orphan a tool result, never leave a call unanswered, keep the latest user ask."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.compress.plan import (
    effective_threshold,
    latest_user_index,
    plan_cut,
    repair_tool_pairs,
    stub_bulky_tool_outputs,
)
from harness.compress.summary import summary_message
from harness.types import Message, ToolCall


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    ids = itertools.count()
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, 8))):
        messages.append(Message("user", "u" * draw(st.integers(1, 400))))
        for _ in range(draw(st.integers(0, 3))):
            calls = tuple(ToolCall(f"c{next(ids)}", "t", "{}") for _ in range(draw(st.integers(1, 3))))
            messages.append(Message("assistant", "", tool_calls=calls))
            for c in calls:
                messages.append(Message("tool", "r" * draw(st.integers(1, 600)), tool_call_id=c.id, name="t"))
        if draw(st.booleans()):
            messages.append(Message("assistant", "a" * draw(st.integers(1, 300))))
    return messages


def _check_pairs(messages: list[Message]) -> None:
    open_calls: set[str] = set()
    answered: set[str] = set()
    for m in messages:
        if m.role == "assistant":
            assert not open_calls, "a new assistant message arrived while calls were unanswered"
            open_calls = {c.id for c in m.tool_calls}
        elif m.role == "tool":
            assert m.tool_call_id in open_calls, f"orphan tool result {m.tool_call_id}"
            open_calls.discard(m.tool_call_id or "")
            answered.add(m.tool_call_id or "")
        else:
            assert not open_calls, "a user message arrived while calls were unanswered"
    assert not open_calls, "a tool call was left without a result"


@settings(max_examples=300, deadline=None)
@given(
    transcripts(),
    st.integers(0, 5),
    st.integers(1, 8),
    st.integers(0, 3000),
)
def test_any_cut_keeps_tool_pairs_whole_and_the_latest_user_message(
    messages: list[Message], first_n: int, last_n: int, budget: int
) -> None:
    plan = plan_cut(
        messages,
        count=lambda m: len(m.content) // 4 + 4,
        tail_budget=budget,
        protect_first_n=first_n,
        protect_last_n=last_n,
    )
    assert 0 <= plan.head_end <= plan.tail_start <= len(messages)
    head, tail = messages[: plan.head_end], messages[plan.tail_start :]
    result = repair_tool_pairs([*head, summary_message("summary"), *tail])
    _check_pairs(result)
    latest = latest_user_index(messages)
    assert latest is not None
    assert any(m is messages[latest] for m in result), "the latest user message was summarized away"


def test_repair_strips_unanswered_calls_and_orphan_results() -> None:
    call = ToolCall("x", "t", "{}")
    broken = [
        Message("tool", "orphan", tool_call_id="gone"),
        Message("user", "hi"),
        Message("assistant", "", tool_calls=(call,)),
    ]
    fixed = repair_tool_pairs(broken)
    assert [m.role for m in fixed] == ["user", "assistant"]
    assert fixed[1].tool_calls == () and fixed[1].content == "(tool call removed)"


def test_small_windows_raise_the_threshold_to_three_quarters() -> None:
    assert effective_threshold(0.5, 8192) == 6144
    assert effective_threshold(0.5, 1_000_000) == 500_000
    assert effective_threshold(0.9, 8192) == int(0.9 * 8192)


def test_bulky_tool_outputs_become_one_line_stubs_naming_the_call() -> None:
    call = ToolCall("c1", "read_file", '{"path": "big.txt"}')
    msgs = [
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "x" * 5000, tool_call_id="c1", name="read_file"),
    ]
    stubbed = stub_bulky_tool_outputs(msgs)
    assert stubbed[1].content == '[read_file {"path": "big.txt"} -> 5,000 chars of output, omitted]'
    assert stub_bulky_tool_outputs([Message("tool", "short", tool_call_id="c1")])[0].content == "short"


def test_a_stub_names_the_message_id_of_an_output_in_the_session_store() -> None:
    call = ToolCall("c1", "run_tests", "{}")
    msgs = [
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "FAILED " * 100, tool_call_id="c1", name="run_tests", store_id=42),
    ]
    stubbed = stub_bulky_tool_outputs(msgs)
    assert stubbed[1].content == "[run_tests {} -> 700 chars of output, omitted; stored as message 42]"
    assert stubbed[1].store_id == 42
