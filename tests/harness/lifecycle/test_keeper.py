"""The cache keeper in a real session: refreshes during a long tool call and an idle user,
traced with their reason and cost; nothing when off; a compaction before expiry."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from harness.models.scripted import ScriptedModel, respond
from harness.testing import FakeTokenizer, config, run_turn
from harness.types import Message, ModelRequest, Usage
from harness.wiring import SessionOptions, open_session

BIG = Usage(input=40_000, output=5)


def reply(request: ModelRequest) -> object:
    from harness.models.scripted import ReplyStep, call_tool

    if request.purpose == "keep_warm":
        return ReplyStep(text=".", usage=Usage(cache_read=40_000, output=1))
    if request.purpose != "turn":
        return ReplyStep(text="summary", usage=Usage(input=100, output=20))
    last = request.messages[-1]
    if last.role == "tool":
        return ReplyStep(text="done", usage=BIG)
    return call_tool("slow_tool", {}, usage=BIG)


async def slow_tool() -> str:
    """Runs for a while (a build, a crawl)."""
    await anyio.sleep(1.0)
    return "built"


def lifecycle_config(**extra: str) -> dict[str, str]:
    return {
        "model__provider": "anthropic",
        "model__name": "claude-sonnet-4-5",
        "cache_lifecycle__ttl_s": "0.4",
        "cache_lifecycle__margin_s": "0.15",
        **extra,
    }


def trace_lines(home: Path) -> list[dict[str, object]]:
    return [
        json.loads(line)
        for p in sorted((home / "traces").glob("*.jsonl"))
        for line in p.read_text().splitlines()
    ]


async def test_a_long_tool_call_is_kept_warm_and_every_refresh_is_traced(home: Path) -> None:
    model = ScriptedModel([respond(reply)] * 30)  # type: ignore[arg-type]  # reply returns a ReplyLike
    cfg = config(**lifecycle_config(cache_lifecycle__keep_warm="true"))
    async with open_session(
        cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer()), tools=[slow_tool]
    ) as s:
        await run_turn(s, "build it")
        assert s.transcript[-1].content == "done"
        refreshes = [a for a in s.cache_keeper.actions if a.action == "refresh"]
    assert refreshes and all(a.reason == "tool_wait" for a in refreshes)
    sent = [r for r in model.requests if r.purpose == "keep_warm"]
    assert len(sent) == len(refreshes)
    turn = next(r for r in model.requests if r.purpose == "turn")
    assert all(r.max_tokens == 1 and r.messages == turn.messages and r.system == turn.system for r in sent)
    traced = [line for line in trace_lines(home) if line["purpose"] == "keep_warm"]
    assert len(traced) == len(sent)
    note = traced[0]["refresh"]
    assert isinstance(note, dict) and note["reason"] == "tool_wait" and note["prefix_tokens"] == 40_000
    assert 0 < note["cost_usd"] < note["saving_usd"]


async def test_nothing_is_sent_when_keep_warm_is_off(home: Path) -> None:
    model = ScriptedModel([respond(reply)] * 10)  # type: ignore[arg-type]
    async with open_session(
        config(**lifecycle_config()),
        SessionOptions(model=model, home=home, tokenizer=FakeTokenizer()),
        tools=[slow_tool],
    ) as s:
        await run_turn(s, "build it")
        async with s.idle():
            await anyio.sleep(0.6)
        assert s.cache_keeper.actions == []
    assert [r.purpose for r in model.requests] == ["turn", "turn"]


async def test_an_idle_user_is_kept_warm_then_the_session_is_compacted_before_expiry(home: Path) -> None:
    model = ScriptedModel([respond(reply)] * 40)  # type: ignore[arg-type]
    cfg = config(
        **lifecycle_config(
            cache_lifecycle__keep_warm="true",
            cache_lifecycle__compact_before_expiry="true",
            cache_lifecycle__idle_window_s="0.6",
            cache_lifecycle__compact_min_tokens="1000",
        )
    )
    async with open_session(
        cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer()), tools=[slow_tool]
    ) as s:
        history = [
            Message(role, f"earlier {role} {i}: " + "details of the build " * 60)
            for i in range(8)
            for role in ("user", "assistant")
        ]
        await s.inject(history)  # enough turns for a compaction to cut
        await run_turn(s, "build it")
        first = s.session_id
        async with s.idle():
            await anyio.sleep(1.5)
        actions = [(a.action, a.reason) for a in s.cache_keeper.actions]
        assert ("compact", "user_idle") in actions
        assert s.session_id != first and s.parent_session_id == first  # compacted into a child
        assert s.calls.prefix is None  # the old prefix is not refreshed any more
        after = len(model.requests)
        async with s.idle():
            await anyio.sleep(0.6)
        assert len(model.requests) == after
