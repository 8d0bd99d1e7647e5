"""The per-provider circuit breaker, driven through the MemoryManager with an injected clock."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from pydantic import JsonValue

from memory import MemoryManager, ProviderContext
from memory.providers._breaker import CircuitBreaker
from memory.testing import ScriptedProvider

TOOL: dict[str, JsonValue] = {"name": "fact_store", "description": "", "parameters": {"type": "object"}}


class FakeClock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


async def make(home: Path) -> tuple[FakeClock, ScriptedProvider, MemoryManager]:
    """A manager (5 failures open the breaker for 120 s) with a provider whose tool calls fail."""
    clock = FakeClock()
    flaky = ScriptedProvider("flaky", tools=[TOOL], failing=["handle_tool_call"])
    manager = MemoryManager(
        ScriptedProvider("builtin"), clock=clock, breaker_failures=5, breaker_pause_s=120.0
    )
    assert manager.add_provider(flaky)
    await manager.initialize(ProviderContext("s1", agent_context="primary", home=home, platform="cli"))
    return clock, flaky, manager


async def test_the_breaker_opens_after_five_failures_pauses_then_half_opens_and_closes(home: Path) -> None:
    clock, flaky, manager = await make(home)

    for _ in range(4):
        await manager.handle_tool_call("fact_store", {})
        assert manager.breaker_state("flaky") == "closed"
    await manager.handle_tool_call("fact_store", {})
    assert manager.breaker_state("flaky") == "open"
    assert len(flaky.called("handle_tool_call")) == 5
    assert any("pausing it for 120 s" in w for w in manager.warnings)

    # Paused: no call reaches the provider, whatever the hook.
    clock.now += 119.0
    reply = json.loads(await manager.handle_tool_call("fact_store", {}))
    assert "paused" in reply["error"]
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="anything at all")
        recall = await manager.recall(turn=1)
        manager.sync_turn(tg, user_content="u", assistant_content="a")
        manager.queue_prefetch(tg, query="next turn")
    await manager.on_turn_start(2, "hello there")
    assert recall.skipped == ("flaky",)
    assert len(flaky.called("handle_tool_call")) == 5
    for hook in ("prefetch", "sync_turn", "queue_prefetch", "on_turn_start"):
        assert flaky.called(hook) == [], hook
    assert manager.breaker_state("flaky") == "open"

    # The pause is over: one trial call goes through; it succeeds and closes the breaker.
    clock.now += 1.0
    assert manager.breaker_state("flaky") == "half_open"
    flaky.failing.clear()
    assert json.loads(await manager.handle_tool_call("fact_store", {})) == {"ok": True}
    assert len(flaky.called("handle_tool_call")) == 6
    assert manager.breaker_state("flaky") == "closed"


async def test_a_failed_trial_reopens_the_breaker_for_another_pause(home: Path) -> None:
    clock, flaky, manager = await make(home)
    for _ in range(5):
        await manager.handle_tool_call("fact_store", {})
    clock.now += 120.0
    await manager.handle_tool_call("fact_store", {})  # the trial, which fails
    assert len(flaky.called("handle_tool_call")) == 6
    assert manager.breaker_state("flaky") == "open"
    await manager.handle_tool_call("fact_store", {})
    assert len(flaky.called("handle_tool_call")) == 6


async def test_a_success_resets_the_count_of_consecutive_failures(home: Path) -> None:
    _, flaky, manager = await make(home)
    for _ in range(4):
        await manager.handle_tool_call("fact_store", {})
    flaky.failing.clear()
    await manager.handle_tool_call("fact_store", {})
    flaky.failing.add("handle_tool_call")
    for _ in range(4):
        await manager.handle_tool_call("fact_store", {})
    assert manager.breaker_state("flaky") == "closed"


async def test_the_builtin_provider_is_never_paused(home: Path) -> None:
    builtin = ScriptedProvider("builtin", tools=[TOOL], failing=["handle_tool_call"])
    manager = MemoryManager(builtin, clock=FakeClock(), breaker_failures=2)
    for _ in range(5):
        await manager.handle_tool_call("fact_store", {})
    assert len(builtin.called("handle_tool_call")) == 5
    assert manager.breaker_state("builtin") == "closed"


def test_only_one_trial_is_granted_while_half_open() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failures=1, pause_s=10.0, clock=clock)
    assert breaker.acquire()
    assert breaker.failed() is True
    assert not breaker.acquire()
    clock.now += 10.0
    assert breaker.acquire()
    assert not breaker.acquire()  # the trial is still in flight
    breaker.abandoned()
    assert breaker.acquire()
    breaker.succeeded()
    assert breaker.state == "closed"


def test_a_breaker_needs_a_positive_threshold() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        CircuitBreaker(failures=0, pause_s=1.0, clock=FakeClock())
