"""The provider contract: only `name` is required, every other hook is a harmless default."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from memory import MemoryManager, MemoryProvider, MemoryWrite, ProviderContext, TurnMessage
from memory.testing import ScriptedProvider


class OnlyAName(MemoryProvider):
    name = "minimal"


def test_a_provider_without_a_name_cannot_be_instantiated() -> None:
    class Nameless(MemoryProvider):
        pass

    with pytest.raises(TypeError, match="name"):
        Nameless()  # type: ignore[abstract]  # the point of the test


async def test_a_provider_defining_only_name_survives_a_whole_manager_lifecycle(home: Path) -> None:
    manager = MemoryManager(ScriptedProvider("builtin"), clock=lambda: 0.0)
    assert manager.add_provider(OnlyAName())
    await manager.initialize(ProviderContext("s1", agent_context="primary", home=home, platform="cli"))
    assert manager.system_prompt_block() == ""
    assert manager.tool_schemas() == []
    messages = [TurnMessage(role="user", content="hi"), TurnMessage(role="assistant", content="hello")]
    async with anyio.create_task_group() as tg:
        for turn in (1, 2):
            await manager.on_turn_start(turn, "what did we decide about the roof")
            manager.start_prefetch(tg, turn=turn, query="what did we decide about the roof")
            recall = await manager.recall(turn=turn)
            assert recall.text == ""
            assert recall.missed == ()
            manager.sync_turn(tg, user_content="q", assistant_content="a")
            manager.queue_prefetch(tg, query="q")
    await manager.notify_memory_write(
        MemoryWrite(
            action="add", target="memory", content="x", old_text=None, previous_content=None, session_id="s1"
        )
    )
    assert await manager.on_pre_compress(messages) == ""
    await manager.on_session_switch("s2", parent_session_id="s1", reason="compression")
    await manager.on_delegation("t", "r", child_session_id="c")
    await manager.on_session_end(messages)
    await manager.shutdown()
    assert manager.warnings == ()


async def test_the_default_tool_handler_answers_with_a_json_error() -> None:
    reply = json.loads(await OnlyAName().handle_tool_call("anything", {"a": 1}))
    assert reply == {"error": "tool 'anything' is not provided by memory provider 'minimal'"}


def test_value_types_are_frozen_and_carry_a_kind() -> None:
    message = TurnMessage(role="user", content="hi")
    assert message.kind == "turn_message"
    with pytest.raises(AttributeError):
        message.content = "changed"  # type: ignore[misc]  # the point of the test
    write = MemoryWrite(
        action="replace", target="user", content="new", old_text="ol", previous_content="old", session_id="s"
    )
    assert write.kind == "memory_write"
