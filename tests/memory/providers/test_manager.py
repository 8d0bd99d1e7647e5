"""MemoryManager: registration, tool routing, isolation, agent-context gating, shutdown."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from pydantic import JsonValue

from memory import MemoryManager, MemoryProvider, MemoryWrite, ProviderContext, TurnMessage
from memory.testing import ScriptedProvider


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def tool(name: str) -> dict[str, JsonValue]:
    return {
        "name": name,
        "description": f"the {name} tool",
        "parameters": {"type": "object", "properties": {}},
    }


def make_manager(
    builtin: ScriptedProvider | None = None, *, breaker_failures: int = 5, shutdown_timeout_s: float = 5.0
) -> MemoryManager:
    return MemoryManager(
        builtin or ScriptedProvider("builtin", tools=[tool("memory")]),
        clock=FakeClock(),
        breaker_failures=breaker_failures,
        shutdown_timeout_s=shutdown_timeout_s,
    )


async def start(manager: MemoryManager, home: Path, *, context: str = "primary") -> None:
    assert context in ("primary", "subagent", "cron", "flush")
    await manager.initialize(ProviderContext("s1", agent_context=context, home=home, platform="cli"))  # type: ignore[arg-type]  # checked above


def write() -> MemoryWrite:
    return MemoryWrite(
        action="add",
        target="user",
        content="likes tea",
        old_text=None,
        previous_content=None,
        session_id="s1",
    )


# ---------------------------------------------------------------- registration and routing


def test_builtin_is_first_and_one_external_is_accepted() -> None:
    manager = make_manager()
    assert manager.add_provider(ScriptedProvider("holo")) is True
    assert manager.providers == ("builtin", "holo")
    assert manager.external == "holo"
    assert manager.warnings == ()


def test_a_second_external_provider_is_refused_with_a_warning_naming_the_first() -> None:
    seen: list[str] = []
    manager = MemoryManager(ScriptedProvider("builtin"), clock=FakeClock(), warn=seen.append)
    assert manager.add_provider(ScriptedProvider("holo", tools=[tool("fact_store")]))
    assert manager.add_provider(ScriptedProvider("other", tools=[tool("other_tool")])) is False
    assert manager.providers == ("builtin", "holo")
    assert manager.tool_owner("other_tool") is None
    assert len(seen) == 1
    assert "'other'" in seen[0]
    assert "'holo'" in seen[0]
    assert manager.warnings == tuple(seen)


def test_an_unavailable_provider_is_not_registered() -> None:
    manager = make_manager()
    assert manager.add_provider(ScriptedProvider("holo", available=False)) is False
    assert manager.external is None
    assert "not available" in manager.warnings[0]


def test_a_provider_whose_schemas_raise_changes_nothing() -> None:
    manager = make_manager()
    assert manager.add_provider(ScriptedProvider("holo", failing=["tool_schemas"])) is False
    assert manager.providers == ("builtin",)
    # The slot is still free for a working provider.
    assert manager.add_provider(ScriptedProvider("good", tools=[tool("fact_store")]))
    assert manager.tool_owner("fact_store") == "good"


async def test_tool_calls_are_routed_to_the_owning_provider() -> None:
    builtin = ScriptedProvider("builtin", tools=[tool("memory")], tool_reply='{"from": "builtin"}')
    holo = ScriptedProvider(
        "holo",
        tools=[tool("fact_store"), {"type": "function", "function": tool("fact_feedback")}],
        tool_reply='{"from": "holo"}',
    )
    manager = make_manager(builtin)
    manager.add_provider(holo)
    assert [s["name"] for s in manager.tool_schemas()] == ["memory", "fact_store", "fact_feedback"]
    assert json.loads(await manager.handle_tool_call("memory", {"action": "add"})) == {"from": "builtin"}
    assert json.loads(await manager.handle_tool_call("fact_feedback", {"fact_id": 1})) == {"from": "holo"}
    assert holo.called("handle_tool_call") == [("fact_feedback", '{"fact_id": 1}')]
    assert builtin.called("handle_tool_call") == [("memory", '{"action": "add"}')]


async def test_an_unknown_tool_gets_a_json_error() -> None:
    manager = make_manager()
    reply = json.loads(await manager.handle_tool_call("nope", {}))
    assert "unknown memory tool 'nope'" in reply["error"]


def test_tools_that_shadow_core_or_earlier_tools_are_refused_and_the_first_wins() -> None:
    manager = make_manager()
    holo = ScriptedProvider(
        "holo",
        tools=[
            tool("memory"),
            tool("session_search"),
            tool("skill_manage"),
            tool("fact_store"),
            tool("fact_store"),
        ],
    )
    assert manager.add_provider(holo)
    assert manager.tool_owner("memory") == "builtin"
    assert manager.tool_owner("session_search") is None
    assert manager.tool_owner("skill_manage") is None
    assert manager.tool_owner("fact_store") == "holo"
    assert [s["name"] for s in manager.tool_schemas()] == ["memory", "fact_store"]
    warnings = "\n".join(manager.warnings)
    assert "'memory' of memory provider 'holo' shadows a core tool" in warnings
    assert "'session_search'" in warnings
    assert "'fact_store' of memory provider 'holo' is already provided by 'holo'" in warnings


def test_malformed_tool_schemas_are_skipped_with_a_warning() -> None:
    manager = make_manager()
    bad: list[dict[str, JsonValue]] = [{"description": "no name"}, {"name": "has space"}, tool("ok_tool")]
    assert manager.add_provider(ScriptedProvider("holo", tools=bad))
    assert manager.tool_owner("ok_tool") == "holo"
    assert sum("malformed" in w for w in manager.warnings) == 2


async def test_a_provider_exception_in_a_tool_call_becomes_a_json_error() -> None:
    manager = make_manager()
    manager.add_provider(ScriptedProvider("holo", tools=[tool("fact_store")], failing=["handle_tool_call"]))
    reply = json.loads(await manager.handle_tool_call("fact_store", {"action": "list"}))
    assert reply["error"].startswith("Memory tool 'fact_store' failed:")
    assert "failed on purpose" in reply["error"]


async def test_a_provider_that_fails_to_initialize_is_dropped_with_its_tools(home: Path) -> None:
    manager = make_manager()
    manager.add_provider(ScriptedProvider("holo", tools=[tool("fact_store")], failing=["initialize"]))
    await start(manager, home)
    assert manager.providers == ("builtin",)
    assert manager.tool_owner("fact_store") is None
    assert any("did not initialize" in w for w in manager.warnings)


async def test_providers_cannot_be_added_after_initialize(home: Path) -> None:
    manager = make_manager()
    await start(manager, home)
    assert manager.add_provider(ScriptedProvider("holo")) is False


# ---------------------------------------------------------------- isolation


# Every hook of the contract except the three a provider needs to get registered and
# initialized at all (their failures have their own tests).
FAILING_HOOKS = {
    "system_prompt_block",
    "prefetch",
    "queue_prefetch",
    "sync_turn",
    "handle_tool_call",
    "on_turn_start",
    "on_session_end",
    "on_pre_compress",
    "on_session_switch",
    "on_memory_write",
    "on_delegation",
    "shutdown",
}
PER_TURN_HOOKS = {
    "prefetch",
    "queue_prefetch",
    "sync_turn",
    "handle_tool_call",
    "on_turn_start",
    "on_memory_write",
}


async def test_a_provider_raising_in_every_hook_does_not_break_a_five_turn_session(home: Path) -> None:
    builtin = ScriptedProvider(
        "builtin", tools=[tool("memory")], recall="builtin recall", tool_reply='{"done": true}'
    )
    broken = ScriptedProvider(
        "broken", tools=[tool("fact_store")], failing=FAILING_HOOKS, block="never shown"
    )
    # A high threshold keeps the breaker closed so every hook really reaches the provider.
    manager = make_manager(builtin, breaker_failures=1000)
    assert manager.add_provider(broken)
    await start(manager, home)
    assert manager.system_prompt_block() == ""

    async with anyio.create_task_group() as tg:
        for turn in range(1, 6):
            message = f"question number {turn} about the project"
            await manager.on_turn_start(turn, message)
            manager.start_prefetch(tg, turn=turn, query=message)
            recall = await manager.recall(turn=turn)
            assert recall.text == "builtin recall"
            assert recall.sources == ("builtin",)
            assert json.loads(await manager.handle_tool_call("memory", {"action": "add"})) == {"done": True}
            assert "error" in json.loads(await manager.handle_tool_call("fact_store", {"action": "list"}))
            await manager.notify_memory_write(write())
            manager.sync_turn(tg, user_content=message, assistant_content="an answer")
            manager.queue_prefetch(tg, query=message)
        messages = [TurnMessage(role="user", content="hi")]
        assert await manager.on_pre_compress(messages) == ""
        await manager.on_session_switch("s2", parent_session_id="s1", reason="compression")
        await manager.on_delegation("task", "result", child_session_id="c1")
        await manager.on_session_end(messages)
    await manager.shutdown()

    for hook in FAILING_HOOKS:
        assert len(broken.called(hook)) == (5 if hook in PER_TURN_HOOKS else 1), hook
    assert len(builtin.called("sync_turn")) == 5
    assert len(builtin.called("shutdown")) == 1
    # One warning per failed call: 6 hooks x 5 turns + 6 one-off hooks.
    assert sum("'broken'" in w for w in manager.warnings) == 36


# ---------------------------------------------------------------- agent_context gating


# Explicit anyio mark: the conftest hook that marks async tests runs after parametrization,
# which loses the parameters of parametrized async tests.
@pytest.mark.anyio
@pytest.mark.parametrize("agent_context", ["subagent", "cron", "flush"])
async def test_non_primary_agents_do_not_write_to_external_providers(home: Path, agent_context: str) -> None:
    builtin = ScriptedProvider("builtin")
    holo = ScriptedProvider("holo", recall="recalled")
    manager = make_manager(builtin)
    manager.add_provider(holo)
    await start(manager, home, context=agent_context)
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="what is the plan")
        recall = await manager.recall(turn=1)
        manager.sync_turn(tg, user_content="u", assistant_content="a")
    await manager.notify_memory_write(write())
    await manager.on_session_end([TurnMessage(role="user", content="u")])
    # Reads still work ...
    assert recall.text == "recalled"
    # ... but the external provider heard of no write.
    assert holo.called("sync_turn") == []
    assert holo.called("on_memory_write") == []
    assert holo.called("on_session_end") == []
    assert len(builtin.called("sync_turn")) == 1


async def test_a_primary_agent_writes_to_external_providers(home: Path) -> None:
    builtin = ScriptedProvider("builtin")
    holo = ScriptedProvider("holo")
    manager = make_manager(builtin)
    manager.add_provider(holo)
    await start(manager, home)
    async with anyio.create_task_group() as tg:
        manager.sync_turn(tg, user_content="u", assistant_content="a")
    await manager.notify_memory_write(write())
    await manager.on_session_end([TurnMessage(role="user", content="u")])
    assert holo.called("sync_turn") == [("u", "a", "s1")]
    assert holo.called("on_memory_write") == [(write(),)]
    assert len(holo.called("on_session_end")) == 1
    # The built-in store is the source of the write; it is never told about it.
    assert builtin.called("on_memory_write") == []


async def test_sync_turns_reach_a_provider_in_turn_order(home: Path) -> None:
    holo = ScriptedProvider("holo")
    gate = holo.hold("sync_turn")
    manager = make_manager()
    manager.add_provider(holo)
    await start(manager, home)
    async with anyio.create_task_group() as tg:
        for turn in range(1, 4):
            manager.sync_turn(tg, user_content=f"u{turn}", assistant_content=f"a{turn}")
        await holo.entered("sync_turn").wait()
        await anyio.wait_all_tasks_blocked()
        # The first sync is blocked inside the provider; the others wait their turn.
        assert [args[0] for args in holo.called("sync_turn")] == ["u1"]
        assert "holo" in manager.writing  # what `keel chat` says it waits for on /exit
        gate.set()
    assert [args[0] for args in holo.called("sync_turn")] == ["u1", "u2", "u3"]
    assert manager.writing == ()


# ---------------------------------------------------------------- prompt block, pre-compress, switch


async def test_system_prompt_block_joins_external_blocks_only(home: Path) -> None:
    manager = make_manager(ScriptedProvider("builtin", block="BUILTIN BLOCK"))
    manager.add_provider(ScriptedProvider("holo", block="  # Holo\nuse fact_store  "))
    await start(manager, home)
    assert manager.system_prompt_block() == "# Holo\nuse fact_store"


async def test_pre_compress_joins_every_providers_text(home: Path) -> None:
    manager = make_manager(ScriptedProvider("builtin", pre_compress="from builtin"))
    manager.add_provider(ScriptedProvider("holo", pre_compress="from holo"))
    await start(manager, home)
    assert (
        await manager.on_pre_compress([TurnMessage(role="user", content="x")]) == "from builtin\n\nfrom holo"
    )


async def test_session_switch_updates_the_session_id_passed_to_providers(home: Path) -> None:
    holo = ScriptedProvider("holo")
    manager = make_manager()
    manager.add_provider(holo)
    await start(manager, home)
    await manager.on_session_switch("s2", parent_session_id="s1", reason="compression")
    assert holo.called("on_session_switch") == [("s2", "s1", "compression")]
    async with anyio.create_task_group() as tg:
        manager.sync_turn(tg, user_content="u", assistant_content="a")
    assert holo.called("sync_turn") == [("u", "a", "s2")]


# ---------------------------------------------------------------- shutdown


async def test_shutdown_runs_in_reverse_registration_order(home: Path) -> None:
    log: list[str] = []
    manager = make_manager(ScriptedProvider("builtin", log=log))
    manager.add_provider(ScriptedProvider("holo", log=log))
    await start(manager, home)
    log.clear()
    await manager.shutdown()
    assert log == ["holo.shutdown", "builtin.shutdown"]


async def test_a_hanging_shutdown_is_bounded_and_the_rest_still_shut_down(home: Path) -> None:
    log: list[str] = []
    builtin = ScriptedProvider("builtin", log=log)
    hanging = ScriptedProvider("holo", log=log)
    hanging.hold("shutdown")  # never released
    manager = make_manager(builtin, shutdown_timeout_s=0.05)
    manager.add_provider(hanging)
    await start(manager, home)
    log.clear()
    with anyio.fail_after(5):
        await manager.shutdown()
    assert log == ["holo.shutdown", "builtin.shutdown"]
    assert any("'holo' did not shut down within 0.05 s" in w for w in manager.warnings)


async def test_a_failing_shutdown_does_not_stop_the_others(home: Path) -> None:
    builtin = ScriptedProvider("builtin")
    manager = make_manager(builtin)
    manager.add_provider(ScriptedProvider("holo", failing=["shutdown"]))
    await start(manager, home)
    await manager.shutdown()
    assert len(builtin.called("shutdown")) == 1
    assert any("failed to shut down" in w for w in manager.warnings)


async def test_after_shutdown_tools_answer_with_an_error_and_background_work_is_refused(home: Path) -> None:
    builtin = ScriptedProvider("builtin", tools=[tool("memory")])
    manager = make_manager(builtin)
    await start(manager, home)
    await manager.shutdown()
    assert "shut down" in json.loads(await manager.handle_tool_call("memory", {}))["error"]
    async with anyio.create_task_group() as tg:
        manager.sync_turn(tg, user_content="u", assistant_content="a")
        manager.start_prefetch(tg, turn=1, query="what now")
    assert builtin.called("sync_turn") == []
    assert builtin.called("prefetch") == []


# ---------------------------------------------------------------- hooks nobody overrides


class _Bare(MemoryProvider):
    """Overrides nothing: every hook is the contract's no-op."""

    name = "bare"


class _RecordingGroup:
    """Stands in for a task group: records what would have been started."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def start_soon(self, fn: object, *args: object, name: object = None) -> None:
        self.started.append(str(name))


def test_a_hook_is_implemented_only_when_overridden_on_the_class_or_the_instance() -> None:
    manager = MemoryManager(_Bare(), clock=FakeClock())
    entry = manager._fanout.entries[0]
    assert not entry.implements("prefetch")
    assert not entry.implements("sync_turn")

    async def custom(query: str, *, session_id: str) -> str:
        return "recalled"

    entry.provider.prefetch = custom  # type: ignore[method-assign]  # an instance override counts too
    assert entry.implements("prefetch")
    scripted = ScriptedProvider("holo")
    assert manager.add_provider(scripted)
    assert manager._fanout.entries[1].implements("sync_turn")


async def test_background_hooks_start_tasks_only_for_providers_that_override_them(tmp_path: Path) -> None:
    manager = MemoryManager(_Bare(), clock=FakeClock())
    assert manager.add_provider(ScriptedProvider("holo"))
    await start(manager, tmp_path)
    group = _RecordingGroup()
    manager.sync_turn(group, user_content="hi", assistant_content="hello")  # type: ignore[arg-type]  # duck-typed group
    manager.queue_prefetch(group, query="what did we decide about the ingest job?")  # type: ignore[arg-type]
    manager.start_prefetch(group, turn=2, query="what did we decide about the ingest job?")  # type: ignore[arg-type]
    assert group.started == ["sync_turn:holo", "queue_prefetch:holo", "prefetch:holo"]


async def test_a_round_nobody_can_answer_returns_at_once_with_nothing(tmp_path: Path) -> None:
    manager = MemoryManager(_Bare(), clock=FakeClock())
    await start(manager, tmp_path)
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="what did we decide about the ingest job?")
        assert manager.has_round(1)
        recall = await manager.recall(turn=1, wait_s=0.0)
    assert recall.text == "" and recall.missed == () and recall.skipped == ()
