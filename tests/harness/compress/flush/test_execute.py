"""Executing a flush reply: facts rest on the user's and the tools' words, never the assistant's."""

from __future__ import annotations

from harness.compress.flush import execute_flush_reply
from harness.types import Message, ModelRequest
from tests.harness.compress.flush.flushkit import reply as _reply


async def test_the_assistants_advice_is_not_grounds_for_a_fact_about_the_user() -> None:
    request = ModelRequest(
        system="You are keel.",
        messages=(
            Message(
                "user", "I need a spreadsheet for flour orders; everything I have is in LibreOffice Calc."
            ),
            Message("assistant", "You might consider moving the orders into QuickBooks as well."),
            Message("tool", "Supplier list: Shipton Mill, 25 kg sacks of strong white flour."),
            Message("user", "[System: this conversation is about to be compressed.]"),
        ),
        purpose="flush",
    )
    text = (
        "user: Keeps the flour orders in LibreOffice Calc\n"
        "user: Moves the orders into QuickBooks\n"
        "user: Orders flour from Shipton Mill in 25 kg sacks"
    )
    outcome = await execute_flush_reply(_reply(text), request, shape="text_list", memory_tool=None)
    refused = {e.content: e.reason for e in outcome.entries}
    assert refused["Moves the orders into QuickBooks"].startswith("not in the conversation")
    # the user's words and the tool's result still ground facts (no memory tool here: none is saved)
    assert refused["Keeps the flour orders in LibreOffice Calc"].startswith("no memory tool")
    assert refused["Orders flour from Shipton Mill in 25 kg sacks"].startswith("no memory tool")


async def test_a_write_the_memory_tool_declines_is_recorded_with_its_sentence_not_its_json() -> None:
    from harness.tools import RawTool, ToolOutput
    from harness.types import ToolSpec

    async def declines(_: str) -> ToolOutput:
        return ToolOutput(
            '{"success": true, "message": "That entry already exists in USER.md; nothing was added."}'
        )

    request = ModelRequest(
        system="",
        messages=(Message("user", "I edit everything in vim."), Message("user", "[System: note]")),
        purpose="flush",
    )
    tool = RawTool(ToolSpec("memory", "Save a fact."), declines)
    outcome = await execute_flush_reply(
        _reply("", ("memory", {"action": "add", "target": "user", "content": "Edits in vim"})),
        request,
        shape="free_calls",
        memory_tool=tool,
    )
    assert [e.reason for e in outcome.entries] == ["That entry already exists in USER.md; nothing was added."]


async def test_a_compression_checkpoint_is_not_grounds_for_a_fact() -> None:
    checkpoint = Message(
        "user",
        "[CONTEXT CHECKPOINT]\nIdentifiers that appeared in the compressed turns: Calc; Declan; QuickBooks",
        summary=True,
    )
    request = ModelRequest(
        system="",
        messages=(
            checkpoint,
            Message("user", "I keep the accounting simple."),
            Message("user", "[System: note]"),
        ),
        purpose="flush",
    )
    outcome = await execute_flush_reply(
        _reply("memory: I use QuickBooks for my accounting."), request, shape="text_list", memory_tool=None
    )
    [entry] = outcome.entries
    assert entry.reason.startswith("not in the conversation")
