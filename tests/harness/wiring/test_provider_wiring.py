"""The provider contract wired end to end through `open_session`, with a real manager,
state.db and curated store: session ids and switch reasons, session ends, the flush's agent
context, background prefetch, recall persistence, and what a memory write tells providers."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import pytest

from harness.config import KeelConfig
from harness.errors import ModelServerError
from harness.events import RecallAttached
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, fail, run_turn, say
from harness.wiring import OpenedSession, SessionOptions, open_session
from memory import MemoryWrite, SessionDB, TurnMessage
from memory.testing import ScriptedProvider

LONG = " ".join(["word"] * 60)


def with_provider(
    home: Path, model: ScriptedModel, provider: ScriptedProvider, cfg: KeelConfig | None = None
) -> AbstractAsyncContextManager[OpenedSession]:
    """A session on `home` answered by `model`, with `provider` as its external memory provider."""
    options = SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), provider=provider)
    return open_session(config() if cfg is None else cfg, options)


def _calls(provider: ScriptedProvider, hook: str) -> list[tuple[object, ...]]:
    return [args for name, args in provider.calls if name == hook]


async def test_a_new_conversation_moves_providers_and_the_manager_to_the_new_session_id(home: Path) -> None:
    provider = ScriptedProvider("p")
    model = ScriptedModel([say("one"), say("two")])
    async with with_provider(home, model, provider) as s:
        await run_turn(s, "first conversation")
        old = s.session_id
        await s.new_conversation()
        assert s.session_id != old
        assert s.handles.manager.session_id == s.session_id
        await run_turn(s, "second conversation")
        new = s.session_id
    assert _calls(provider, "on_session_switch") == [(new, None, "new")]
    ended = _calls(provider, "on_session_end")
    # the first conversation ended at /new with its messages; the second at exit with its own
    first = ended[0][0]
    assert isinstance(first, tuple) and TurnMessage("user", "first conversation") in first
    assert TurnMessage("user", "second conversation") in ended[-1][0]  # type: ignore[operator]
    # sync_turn after the switch was filed under the new id
    assert _calls(provider, "sync_turn")[-1][2] == new


async def test_compression_says_compression_ends_the_old_row_for_providers_and_flushes_as_flush(
    home: Path,
) -> None:
    provider = ScriptedProvider("p")
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(
        model__context_window="100000", compression__flush="memory_only", compression__flush_chunk_tokens="0"
    )
    async with with_provider(home, model, provider, cfg) as s:
        for i in range(4):
            model.extend([say(f"answer {i} {LONG}")])
            await run_turn(s, f"question {i} {LONG}")
        # a memory write in an ordinary turn reaches the provider (primary context)
        model.extend(
            [call_tool("memory", {"action": "add", "target": "user", "content": "User likes tea"}), say("ok")]
        )
        await run_turn(s, "remember tea; and we deploy on Fridays")
        writes_before = len(_calls(provider, "on_memory_write"))
        old = s.session_id
        model.extend(
            [
                call_tool("memory", {"action": "add", "target": "memory", "content": "Deploys on Fridays"}),
                say("the checkpoint"),
            ]
        )
        await s.compress()
        new = s.session_id
    assert writes_before == 1
    # the flush's write landed in the store but was not told to the external provider
    assert len(_calls(provider, "on_memory_write")) == writes_before
    assert (home / "memories" / "MEMORY.md").read_text(encoding="utf-8").strip() == "Deploys on Fridays"
    assert _calls(provider, "on_session_switch") == [(new, old, "compression")]
    ends = _calls(provider, "on_session_end")
    assert TurnMessage("user", f"question 0 {LONG}") in ends[0][0]  # type: ignore[operator]


async def test_recall_for_the_next_turn_is_prefetched_in_the_background_after_this_one(home: Path) -> None:
    provider = ScriptedProvider("p", recall=lambda query: f"recalled for {query}")
    model = ScriptedModel([say("a"), say("b")])
    async with with_provider(home, model, provider) as s:
        first = await run_turn(s, "alpha question")
        await provider.entered("prefetch").wait()
        second = await run_turn(s, "beta question")
    prefetches = [args[0] for args in _calls(provider, "prefetch")]
    # turn 1 had nothing prefetched (a cold start on its own message); turn 2 read what was
    # computed after turn 1, and never searched its own message on the hot path
    assert prefetches[:2] == ["alpha question", "alpha question"]
    assert "beta question" not in prefetches[:2]
    assert any(isinstance(e, RecallAttached) for e in first) and any(
        isinstance(e, RecallAttached) for e in second
    )
    sent = model.requests[1].messages[-1].api_content or ""
    assert "recalled for alpha question" in sent


async def test_an_acknowledgement_is_recalled_for_and_prefetched_from_by_nobody(home: Path) -> None:
    provider = ScriptedProvider("p", recall=lambda query: f"recalled for {query}")
    model = ScriptedModel([say("a"), say("b"), say("c")])
    async with with_provider(home, model, provider) as s:
        await run_turn(s, "alpha question")
        await provider.entered("prefetch").wait()
        thanks = await run_turn(s, "thanks!")
        after_thanks = await run_turn(s, "gamma question")
    asked = [args[0] for hook in ("prefetch", "queue_prefetch") for args in _calls(provider, hook)]
    assert "thanks!" not in asked
    assert not any(isinstance(e, RecallAttached) for e in thanks)
    # nothing was prefetched from "thanks!": the next turn recalled for its own message, on the spot
    assert any(isinstance(e, RecallAttached) for e in after_thanks)
    assert "recalled for gamma question" in (model.requests[2].messages[-1].api_content or "")


async def test_recall_that_must_not_persist_never_reaches_state_db(home: Path) -> None:
    provider = ScriptedProvider("p", recall="the user likes tea")
    model = ScriptedModel([say("tea it is"), say("and again")])
    cfg = config(recall__persist="false")
    async with with_provider(home, model, provider, cfg) as s:
        await run_turn(s, "what do I like to drink?")
        sid = s.session_id
        await run_turn(s, "and now?")
    assert "the user likes tea" in (model.requests[0].messages[0].api_content or "")
    # the next request already sent the plain message; the stored row holds exactly those bytes
    assert model.requests[1].messages[0].api_content is None
    db = await SessionDB.open(home / "state.db")
    try:
        rows = await db.get_messages(sid)
    finally:
        await db.aclose()
    assert rows and all("the user likes tea" not in (r.message.api_content or "") for r in rows)


async def test_a_replace_tells_providers_the_locating_substring_and_the_whole_previous_entry(
    home: Path,
) -> None:
    provider = ScriptedProvider("p")
    model = ScriptedModel(
        [
            call_tool(
                "memory", {"action": "add", "target": "user", "content": "Deploys every Friday at 16:00"}
            ),
            say("saved"),
            call_tool(
                "memory",
                {
                    "action": "replace",
                    "target": "user",
                    "old_text": "Friday",
                    "content": "Deploys on Thursdays",
                },
            ),
            say("updated"),
        ]
    )
    async with with_provider(home, model, provider) as s:
        await run_turn(s, "I deploy on Fridays")
        await run_turn(s, "actually Thursdays")
    writes = [args[0] for args in _calls(provider, "on_memory_write")]
    replace = writes[-1]
    assert isinstance(replace, MemoryWrite)
    assert replace.action == "replace"
    assert replace.old_text == "Friday"
    assert replace.previous_content == "Deploys every Friday at 16:00"
    assert replace.content == "Deploys on Thursdays"


async def test_a_model_error_leaves_open_session_as_itself_not_as_an_exception_group(home: Path) -> None:
    provider = ScriptedProvider("p")
    gate = provider.hold("queue_prefetch")  # keeps a background task running in the session's group
    model = ScriptedModel([say("fine"), fail(ModelServerError("overloaded", status=503))])

    async def two_turns() -> None:
        async with with_provider(home, model, provider) as s:
            await run_turn(s, "hello there")
            await provider.entered("queue_prefetch").wait()
            await run_turn(s, "this fails")

    with pytest.raises(ModelServerError):
        await two_turns()
    gate.set()


async def test_a_delegated_task_runs_as_a_subagent_and_the_parents_providers_hear_of_it(home: Path) -> None:
    provider = ScriptedProvider("p")
    model = ScriptedModel([say("the subagent's answer"), say("parent answer")])
    async with with_provider(home, model, provider) as s:
        result = await s.delegate("summarize the deploy notes")
        await run_turn(s, "thanks")
    assert result == "the subagent's answer"
    [(task, answer, child_id)] = _calls(provider, "on_delegation")
    assert (task, answer) == ("summarize the deploy notes", "the subagent's answer")
    # the subagent ran without the external provider: it never heard the task
    assert all(
        "summarize the deploy notes" not in str(args)
        for name, args in provider.calls
        if name != "on_delegation"
    )
    db = await SessionDB.open(home / "state.db")
    try:
        row = await db.get_session(str(child_id))
    finally:
        await db.aclose()
    assert row is not None and row.source == "subagent"


async def test_a_warm_turn_waits_only_warm_wait_s_for_a_prefetch_still_running(home: Path) -> None:
    gates: list[anyio.Event] = []

    def recall(query: str) -> str:
        if not gates:  # after the first (cold) prefetch, every later one blocks until released
            gates.append(provider.hold("prefetch"))
        return f"recalled for {query}"

    provider = ScriptedProvider("p", recall=recall)
    model = ScriptedModel([say("a"), say("b")])
    # A cold wait of 600 s would outlast the test's own timeout: only the warm bound lets turn 2 go on.
    cfg = config(recall__wait_s="600", recall__warm_wait_s="0")
    async with with_provider(home, model, provider, cfg) as s:
        first = await run_turn(s, "alpha question")
        await run_turn(s, "beta question")
        gates[0].set()
    assert any(isinstance(e, RecallAttached) for e in first)
    # turn 2 went ahead without the prefetch that was still running for it
    assert "recalled for" not in (model.requests[1].messages[-1].api_content or "")
    assert [args[0] for args in _calls(provider, "prefetch")][:2] == ["alpha question", "alpha question"]
