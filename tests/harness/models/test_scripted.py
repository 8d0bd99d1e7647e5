"""ScriptedModel: plays its script in order, records requests, streams, and fails loudly."""

from __future__ import annotations

import pytest

from harness.errors import ModelServerError, ScriptExhaustedError
from harness.models import ModelTextDelta, ReplyDone
from harness.models.base import ModelEvent
from harness.models.scripted import ScriptedModel
from harness.testing import FakeTokenizer, call_tool, calls, fail, respond, say, tool_call
from harness.tokens import CharTokenizer, TokenCounter
from harness.types import Message, ModelReply, ModelRequest, ToolCall, ToolSpec, Usage


def request(text: str) -> ModelRequest:
    return ModelRequest(system="You are a test.", messages=(Message(role="user", content=text),))


async def events_of(model: ScriptedModel, req: ModelRequest) -> list[ModelEvent]:
    async with model.stream(req) as events:
        return [event async for event in events]


async def test_replies_follow_the_script_and_every_request_is_recorded() -> None:
    model = ScriptedModel([say("first"), "second"])
    one, two = request("a"), request("b")
    assert (await model.complete(one)).message.content == "first"
    assert (await model.complete(two)).message.content == "second"
    assert model.requests == [one, two]
    assert [r.message.content for r in model.replies] == ["first", "second"]
    model.assert_complete()


async def test_an_exhausted_script_raises_and_says_how_many_replies_it_had() -> None:
    model = ScriptedModel([say("only")])
    await model.complete(request("a"))
    with pytest.raises(ScriptExhaustedError, match="script had 1 step and this is request #2"):
        await model.complete(request("b"))
    assert len(model.requests) == 2  # the unanswered request is still recorded


async def test_a_model_that_does_not_record_keeps_nothing_but_still_counts_requests() -> None:
    model = ScriptedModel([say("first"), "second"], record=False)
    assert (await model.complete(request("a"))).message.content == "first"
    assert (await model.complete(request("b"))).message.content == "second"
    assert model.requests == [] and model.replies == []
    with pytest.raises(ScriptExhaustedError, match="script had 2 steps and this is request #3"):
        await model.complete(request("c"))
    model.assert_complete()


async def test_assert_complete_fails_while_steps_remain() -> None:
    model = ScriptedModel([say("a"), say("b")])
    await model.complete(request("x"))
    assert model.remaining == 1
    with pytest.raises(AssertionError, match="played 1 of 2 steps; 1 never ran"):
        model.assert_complete()


async def test_tool_calls_get_deterministic_ids_unless_given() -> None:
    model = ScriptedModel(
        [
            call_tool("memory", {"action": "add", "content": "tea"}),
            calls(tool_call("a", {}), tool_call("b", "{broken", id="mine"), text="two at once"),
            call_tool("c"),
        ]
    )
    first = await model.complete(request("1"))
    second = await model.complete(request("2"))
    third = await model.complete(request("3"))
    assert first.message.tool_calls == (ToolCall("call_1", "memory", '{"action": "add", "content": "tea"}'),)
    assert second.message.tool_calls == (ToolCall("call_2", "a", "{}"), ToolCall("mine", "b", "{broken"))
    assert second.message.content == "two at once"
    assert third.message.tool_calls == (ToolCall("call_4", "c", "{}"),)
    assert first.finish_reason == "tool_calls"


async def test_raise_steps_and_exception_shorthand_raise_in_order() -> None:
    boom = ModelServerError("scripted outage")
    model = ScriptedModel([fail(boom), ValueError("plain"), "recovered"])
    with pytest.raises(ModelServerError) as info:
        await model.complete(request("a"))
    assert info.value is boom
    with pytest.raises(ValueError, match="plain"):
        await model.complete(request("b"))
    assert (await model.complete(request("c"))).message.content == "recovered"


async def test_dynamic_steps_compute_the_reply_from_the_request() -> None:
    def echo(req: ModelRequest) -> str:
        return f"you said {req.messages[-1].content}"

    def full(req: ModelRequest) -> ModelReply:
        return ModelReply(message=Message(role="assistant", content="exact"), usage=Usage(input=1))

    model = ScriptedModel([respond(echo), full])
    assert (await model.complete(request("tea"))).message.content == "you said tea"
    reply = await model.complete(request("x"))
    assert (reply.message.content, reply.usage) == ("exact", Usage(input=1))


async def test_default_usage_is_estimated_with_the_char_tokenizer_and_given_usage_is_kept() -> None:
    tools = (ToolSpec(name="memory", description="d", parameters={"type": "object"}),)
    req = ModelRequest(system="S" * 400, messages=(Message(role="user", content="hello there"),), tools=tools)
    model = ScriptedModel([say("12345678"), say("x", usage=Usage(input=5, cache_read=95))])
    estimated = await model.complete(req)
    expected_input = TokenCounter(CharTokenizer()).count_prompt(req.system, req.messages, req.tools)
    assert estimated.usage == Usage(input=expected_input, output=2)
    assert expected_input > 100
    assert (await model.complete(req)).usage == Usage(input=5, cache_read=95)


async def test_a_custom_tokenizer_drives_the_estimate() -> None:
    model = ScriptedModel([say("one two three")], tokenizer=FakeTokenizer())
    reply = await model.complete(request("x"))
    assert reply.usage is not None
    assert reply.usage.output == 3


async def test_stream_yields_the_text_in_a_few_chunks_then_reply_done() -> None:
    text = "The quick brown fox jumps over the lazy dog again and again"
    model = ScriptedModel([say(text)])
    events = await events_of(model, request("go"))
    deltas = [e.text for e in events if isinstance(e, ModelTextDelta)]
    assert 1 < len(deltas) <= 3
    assert "".join(deltas) == text
    assert isinstance(events[-1], ReplyDone)
    assert events[-1].reply.message.content == text
    assert all(isinstance(e, ModelTextDelta) for e in events[:-1])


async def test_stream_of_a_tool_call_only_reply_is_just_reply_done() -> None:
    model = ScriptedModel([call_tool("memory", {"action": "read"})])
    events = await events_of(model, request("go"))
    assert len(events) == 1
    assert isinstance(events[0], ReplyDone)


async def test_stream_raises_failures_when_read_and_records_the_request() -> None:
    model = ScriptedModel([ModelServerError("down")])
    with pytest.raises(ModelServerError, match="down"):
        await events_of(model, request("go"))
    with pytest.raises(ScriptExhaustedError):
        await events_of(model, request("again"))
    assert len(model.requests) == 2


async def test_extend_appends_steps_for_later_turns() -> None:
    model = ScriptedModel()
    model.extend(["late"])
    assert (await model.complete(request("x"))).message.content == "late"


def test_a_step_of_an_unknown_kind_is_rejected_up_front() -> None:
    with pytest.raises(TypeError, match="a script step must be"):
        ScriptedModel([42])  # type: ignore[list-item]  # deliberately wrong to test the check
