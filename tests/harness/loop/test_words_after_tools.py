"""After a tool result the user always gets an answer in words: an empty or unreadable reply there is
asked again with `tool_choice: none` (keel's server then bans the call token), not left empty."""

from __future__ import annotations

from harness.events import TextDelta, TurnEnded
from harness.testing import FakeMemory, ScriptedModel, call_tool, config, make_session, run_turn, say


async def test_an_empty_reply_after_a_tool_result_is_asked_again_for_words() -> None:
    model = ScriptedModel(
        [call_tool("memory", {"target": "user", "content": "Name: Ana"}), say(""), say("I'll remember, Ana.")]
    )
    async with make_session(model, memory=FakeMemory()) as session:
        events = await run_turn(session, "I'm Ana")
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "I'll remember, Ana."
    assert isinstance(events[-1], TurnEnded) and events[-1].final_text == "I'll remember, Ana."


async def test_an_empty_first_reply_is_asked_again_with_tools_still_allowed() -> None:
    model = ScriptedModel([say(""), say("Hello.")])
    async with make_session(model) as session:
        await run_turn(session, "hi")
    assert [r.tool_choice for r in model.requests] == ["auto", "auto"]


async def test_an_unreadable_reply_after_a_tool_result_is_asked_again_for_words() -> None:
    # the chat: a right call, its result, then a broken second call instead of the answer
    model = ScriptedModel(
        [
            call_tool("memory", {"target": "user", "content": "Name: Ana"}),
            say('{"name": "memory", "arguments": {"target": "user", "content": "Na'),  # cut short
            say("Saved, Ana."),
        ]
    )
    async with make_session(model, memory=FakeMemory()) as session:
        events = await run_turn(session, "I'm Ana")
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert isinstance(events[-1], TurnEnded) and events[-1].final_text == "Saved, Ana."


async def test_the_last_call_a_turn_may_make_is_asked_for_words() -> None:
    model = ScriptedModel(
        [call_tool("memory", {"target": "user", "content": "Name: Ana"}), say("Done, Ana.")]
    )
    async with make_session(model, memory=FakeMemory(), cfg=config(limits__max_iterations="2")) as session:
        events = await run_turn(session, "I'm Ana")
    assert [r.tool_choice for r in model.requests] == ["auto", "none"]
    assert isinstance(events[-1], TurnEnded) and events[-1].final_text == "Done, Ana."
