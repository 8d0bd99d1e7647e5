"""After a tool result the user always gets an answer in words: an empty reply there is
asked again with `tool_choice: none` (keel's server then bans the call token), not left empty."""

from __future__ import annotations

from harness.events import TextDelta, TurnEnded
from harness.testing import FakeMemory, ScriptedModel, call_tool, make_session, run_turn, say


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
