"""`open_session` with every real component (store, state.db, skills, providers, traces) and
the scripted model: the promises of the frozen prefix, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from harness.config import KeelConfig
from harness.events import MemoryWritten, RecallAttached, Warning
from harness.testing import FakeTokenizer, ScriptedModel, StepLike, call_tool, config, run_turn, say
from harness.trace import read_trace
from harness.wiring import SessionOptions, open_session
from memory import MemoryStore, SessionDB
from tests.harness.wiring.compressing import BY_HAND, compress_after_four_turns
from tests.harness.wiring.scripts import saves_then

SKILL = """---
name: brew-tea
description: How the user likes their tea brewed.
---
# Brew tea
1. Heat water to 80 °C.
2. Steep oolong for three minutes.
"""


async def _records(path: Path) -> list:  # type: ignore[type-arg]  # TraceRecord list
    return await anyio.to_thread.run_sync(lambda: list(read_trace(path)))


async def test_a_scripted_session_writes_memory_db_rows_and_a_trace(home: Path) -> None:
    model = ScriptedModel(
        [
            call_tool("memory", {"action": "add", "target": "user", "content": "User drinks oolong"}),
            say("Noted: oolong."),
            say("Hello again."),
        ]
    )
    async with open_session(config(), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        events = await run_turn(s, "Remember that I drink oolong.")
        await run_turn(s, "Hi!")
        sid = s.session_id
        prompt = s.prompt.text
    assert [e.content for e in events if isinstance(e, MemoryWritten)] == ["User drinks oolong"]
    assert (home / "memories" / "USER.md").read_text(encoding="utf-8").strip() == "User drinks oolong"
    # the frozen prefix did not pick up the mid-session write
    assert "User drinks oolong" not in prompt
    assert "# Memory" in prompt or "memory" in prompt.lower()
    db = await SessionDB.open(home / "state.db")
    try:
        row = await db.get_session(sid)
        msgs = await db.get_messages(sid)
    finally:
        await db.aclose()
    assert row is not None
    assert row.end_reason == "user_exit"
    assert [m.message.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    trace = s.handles.trace_path
    assert trace is not None
    records = await _records(trace)
    assert len(records) == 3
    assert {r.system for r in records} == {prompt}
    assert [t.name for t in records[0].tools][:2] == ["memory", "session_search"]


def _saving_every_fifth_turn(turns: int) -> ScriptedModel:
    """A model that answers `turns` turns and adds `fact N` to memory in every fifth one."""
    script: list[StepLike] = []
    for turn in range(turns):
        if turn % 5 == 4:
            script.append(
                call_tool("memory", {"action": "add", "target": "memory", "content": f"fact {turn}"})
            )
        script.append(say(f"answer {turn}"))
    return ScriptedModel(script)


async def test_fifty_turns_under_frozen_keep_the_prefix_byte_identical_and_append_only(home: Path) -> None:
    model = _saving_every_fifth_turn(50)
    async with open_session(config(), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        for turn in range(50):
            await run_turn(s, f"question {turn}")
    model.assert_complete()
    systems = {r.system for r in model.requests}
    assert len(systems) == 1
    for prev, cur in zip(model.requests, model.requests[1:], strict=False):
        assert cur.messages[: len(prev.messages)] == prev.messages
        assert len(cur.messages) > len(prev.messages)
    store = MemoryStore(home / "memories")
    await store.load()
    assert len(store.entries("memory")) == 10


async def test_under_live_the_system_prompt_changes_after_each_write(home: Path) -> None:
    model = _saving_every_fifth_turn(15)
    cfg = config(memory__snapshot_policy="live")
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        for turn in range(15):
            await run_turn(s, f"question {turn}")
    systems: list[str] = []
    for r in model.requests:
        if not systems or systems[-1] != r.system:
            systems.append(r.system)
    assert len(systems) == 4  # the initial prompt + one rebuild per write
    assert "fact 14" in systems[-1]
    assert all("fact 4" not in s for s in systems[:1])


async def test_invalidate_on_write_rebuilds_at_the_next_turn_after_own_writes_only(home: Path) -> None:
    model = saves_then("memory", "own write", "ok", "next", "third")
    cfg = config(memory__snapshot_policy="invalidate_on_write")
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "write something")
        await run_turn(s, "next turn")
        # another process writes: not our invalidation, the prompt stays
        other = MemoryStore(home / "memories")
        await other.add("memory", "foreign write")
        await run_turn(s, "third turn")
    # the writing turn's requests share one prefix; the write shows from the next turn (the seeds)
    assert model.requests[0].system == model.requests[1].system
    assert "own write" not in model.requests[1].system
    assert "own write" in model.requests[2].system
    assert "foreign write" not in model.requests[3].system


async def test_a_skill_created_mid_session_appears_only_in_the_next_sessions_prompt(home: Path) -> None:
    model = ScriptedModel(
        [
            call_tool("skill_manage", {"action": "create", "name": "brew-tea", "content": SKILL}),
            say("Saved the skill."),
            say("ok"),
            say("ok again"),
        ]
    )
    async with open_session(config(), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "Save how I brew tea as a skill.")
        await run_turn(s, "thanks")
        await run_turn(s, "and?")
        current_prompt = s.prompt.text
    assert (home / "skills" / "brew-tea" / "SKILL.md").exists()
    assert "brew-tea" not in current_prompt
    assert all("brew-tea" not in r.system for r in model.requests)
    nxt = ScriptedModel([say("hi")])
    async with open_session(config(), SessionOptions(model=nxt, home=home, tokenizer=FakeTokenizer())) as s2:
        await run_turn(s2, "hello")
        assert "brew-tea — How the user likes their tea brewed." in s2.prompt.text


async def test_holographic_recall_arrives_fenced_in_the_user_message_and_the_prefix_holds(home: Path) -> None:
    model = saves_then("user", "User drinks oolong tea every morning", "Noted.", "You like oolong.", "ok")
    cfg = config(memory__provider="holographic")
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "Remember: I drink oolong tea every morning.")
        events = await run_turn(s, "Which tea do I drink in the morning?")
        await run_turn(s, "thanks")
    assert any(isinstance(e, RecallAttached) for e in events)
    asked = model.requests[2].messages[-1]
    assert asked.api_content is not None
    assert "<memory-context>" in asked.api_content
    assert "oolong" in asked.api_content.split("<memory-context>")[1]
    assert len({r.system for r in model.requests}) == 1
    # the next request replays the fenced bytes
    assert model.requests[3].messages[len(model.requests[2].messages) - 1].wire_content == asked.api_content


async def test_compression_lineage_is_in_state_db_and_old_messages_stay_searchable(home: Path) -> None:
    long = " ".join(["tea"] * 60)
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg: KeelConfig = config(**BY_HAND)  # automatic compression off: this test compresses by hand, once
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        first, second = await compress_after_four_turns(
            s,
            model,
            question="tell me about the zanzibar kettle",
            answer="answer about the zanzibar kettle",
            filler=long,
        )
        model.extend([call_tool("session_search", {"query": "zanzibar kettle"}), say("found it")])
        events = await run_turn(s, "what did we say about the kettle before?")
    db = await SessionDB.open(home / "state.db")
    try:
        parent = await db.get_session(first)
        child = await db.get_session(second)
    finally:
        await db.aclose()
    assert parent is not None and child is not None
    assert parent.end_reason == "compression"
    assert child.parent_session_id == first
    search_result = next(e for e in events if getattr(e, "kind", "") == "tool_result")
    payload = json.loads(search_result.content)  # type: ignore[union-attr]  # a ToolResultReady
    assert payload["success"] is True
    # the summarized-away turns of the parent session are found from the continuation
    [hit] = payload["results"]
    assert hit["session_id"] == first
    assert any("zanzibar kettle" in m["content"] for m in hit["messages"])


async def test_an_over_budget_memory_file_is_announced_with_the_first_turn(home: Path) -> None:
    memories = home / "memories"
    memories.mkdir(parents=True)
    (memories / "MEMORY.md").write_text(
        "\n§\n".join(f"note number {i}" for i in range(400)), encoding="utf-8"
    )
    model = ScriptedModel([say("hi")])
    async with open_session(config(), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        events = await run_turn(s, "hello")
        prompt = s.prompt.text
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert len(warnings) == 1 and "MEMORY.md holds" in warnings[0] and "over its 2,200 budget" in warnings[0]
    assert "note number 0" in prompt and "note number 399" not in prompt


async def test_a_session_on_a_home_takes_the_turns_another_session_added_between_its_own(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    first = ScriptedModel([say("one"), say("three"), say("four")])
    second = ScriptedModel([say("two")])

    def opts(model: ScriptedModel, resume: str | None = None) -> SessionOptions:
        return SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), resume=resume)

    async with open_session(config(), opts(first)) as a:
        await run_turn(a, "turn 1")
        async with open_session(config(), opts(second, a.session_id)) as b:
            await run_turn(b, "turn 2")
        await run_turn(a, "turn 3")  # the lease was taken in between: a reads what b added
        await run_turn(a, "turn 4")  # nobody in between: a goes on from what it holds
    sent = [m.content for m in first.requests[-1].messages if m.role != "system"]
    assert sent == ["turn 1", "one", "turn 2", "two", "turn 3", "three", "turn 4"]
