"""MemoryManager recall: turn-tagged background prefetch, the bounded wait, trivial messages."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memory import MemoryManager, ProviderContext, is_trivial
from memory.testing import ScriptedProvider


def clock() -> float:
    return 0.0


async def make(home: Path, external: ScriptedProvider, *, wait_s: float = 8.0) -> MemoryManager:
    manager = MemoryManager(
        ScriptedProvider("builtin", recall="from builtin"), clock=clock, recall_wait_s=wait_s
    )
    assert manager.add_provider(external)
    await manager.initialize(ProviderContext("s1", agent_context="primary", home=home, platform="cli"))
    return manager


async def test_recall_joins_this_turns_prefetches_in_registration_order(home: Path) -> None:
    holo = ScriptedProvider("holo", recall=lambda q: f"about {q}")
    manager = await make(home, holo)
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="the garden")
        recall = await manager.recall(turn=1)
    assert recall.text == "from builtin\n\nabout the garden"
    assert recall.sources == ("builtin", "holo")
    assert (recall.turn, recall.missed, recall.skipped, recall.trivial) == (1, (), (), False)
    assert holo.called("prefetch") == [("the garden", "s1")]


async def test_the_bounded_wait_returns_without_the_slow_providers_result(home: Path) -> None:
    slow = ScriptedProvider("slow", recall="too late")
    slow.hold("prefetch")  # never released: the provider hangs
    manager = await make(home, slow, wait_s=0.05)
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="where did we park")
        with anyio.fail_after(5):
            recall = await manager.recall(turn=1)
        tg.cancel_scope.cancel()
    assert recall.text == "from builtin"
    assert recall.missed == ("slow",)
    assert len(slow.called("prefetch")) == 1


async def test_a_late_prefetch_is_discarded_and_never_attached_to_a_later_turn(home: Path) -> None:
    turns_seen: list[str] = []

    def answer(query: str) -> str:
        turns_seen.append(query)
        return f"recall computed for {query!r}"

    slow = ScriptedProvider("slow", recall=answer)
    release_turn_1 = slow.hold("prefetch")
    manager = await make(home, slow, wait_s=0.05)
    async with anyio.create_task_group() as tg:
        # Turn 1: the provider is still working when the wait runs out.
        manager.start_prefetch(tg, turn=1, query="turn one")
        first = await manager.recall(turn=1)
        assert first.missed == ("slow",)

        # Turn 2 begins while turn 1's prefetch is still running: the provider is skipped.
        manager.start_prefetch(tg, turn=2, query="turn two")
        # Now turn 1's prefetch finishes, during turn 2.
        release_turn_1.set()
        await anyio.wait_all_tasks_blocked()
        assert turns_seen == ["turn one"]
        second = await manager.recall(turn=2)
        assert second.text == "from builtin"
        assert "turn one" not in second.text
        assert second.skipped == ("slow",)
        assert second.missed == ()

        # Turn 3: the provider is free again and answers for turn 3.
        manager.start_prefetch(tg, turn=3, query="turn three")
        third = await manager.recall(turn=3)
    assert third.text == "from builtin\n\nrecall computed for 'turn three'"
    assert third.sources == ("builtin", "slow")
    assert [args[0] for args in slow.called("prefetch")] == ["turn one", "turn three"]


async def test_recall_for_a_turn_without_a_started_prefetch_is_empty(home: Path) -> None:
    manager = await make(home, ScriptedProvider("holo", recall="x"))
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=4, query="something real")
        assert (await manager.recall(turn=5)).text == ""
        assert (await manager.recall(turn=4)).text == "from builtin\n\nx"


async def test_trivial_messages_skip_recall(home: Path) -> None:
    holo = ScriptedProvider("holo", recall="x")
    manager = await make(home, holo)
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="thanks!")
        recall = await manager.recall(turn=1)
        manager.queue_prefetch(tg, query="ok")
    assert recall.trivial
    assert recall.text == ""
    assert holo.called("prefetch") == []
    assert holo.called("queue_prefetch") == []


async def test_a_caller_that_judged_the_message_is_trusted_and_not_second_guessed(home: Path) -> None:
    # The session judges each message once; the manager takes its word either way.
    holo = ScriptedProvider("holo", recall="x")
    manager = await make(home, holo)
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="what about the garden", trivial=True)
        judged_trivial = await manager.recall(turn=1)
        manager.queue_prefetch(tg, query="what about the garden", trivial=True)
        assert holo.called("prefetch") == [] and holo.called("queue_prefetch") == []
        manager.start_prefetch(tg, turn=2, query="ok", trivial=False)
        judged_worth_it = await manager.recall(turn=2)
        manager.queue_prefetch(tg, query="ok", trivial=False)
    assert judged_trivial.trivial and judged_trivial.text == ""
    assert not judged_worth_it.trivial and judged_worth_it.text == "from builtin\n\nx"
    assert holo.called("prefetch") == [("ok", "s1")]
    assert holo.called("queue_prefetch") == [("ok", "s1")]


async def test_queue_prefetch_runs_in_the_callers_task_group(home: Path) -> None:
    holo = ScriptedProvider("holo")
    gate = holo.hold("queue_prefetch")
    manager = await make(home, holo)
    async with anyio.create_task_group() as tg:
        manager.queue_prefetch(tg, query="warm the next turn")
        await holo.entered("queue_prefetch").wait()
        gate.set()
    # Leaving the task group waited for the background task to finish.
    assert holo.called("queue_prefetch") == [("warm the next turn", "s1")]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "/help",
        "ok",
        "OK!",
        "thanks",
        "thank you!!",
        "k",
        "lgtm 👍",
        "yes.",
        "no",
        "continue",
        "ok thanks",
    ],
)
def test_acknowledgements_and_commands_are_trivial(text: str) -> None:
    assert is_trivial(text)


@pytest.mark.parametrize(
    "text",
    [
        "k8s",
        "note",
        "no, use postgres",
        "ok so what about the deploy?",
        "thanks for the tea recipe",
        "yesterday",
    ],
)
def test_messages_with_a_topic_are_not_trivial(text: str) -> None:
    assert not is_trivial(text)


async def test_a_cancelled_turn_does_not_leave_a_provider_marked_as_running(home: Path) -> None:
    holo = ScriptedProvider("holo", recall="fresh")
    gate = holo.hold("prefetch")
    manager = await make(home, holo)
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=1, query="first question")
        await holo.entered("prefetch").wait()
        tg.cancel_scope.cancel()  # the user interrupted the turn
    gate.set()
    async with anyio.create_task_group() as tg:
        manager.start_prefetch(tg, turn=2, query="second question")
        recall = await manager.recall(turn=2)
    assert recall.skipped == ()
    assert recall.sources == ("builtin", "holo")
    assert manager.breaker_state("holo") == "closed"
