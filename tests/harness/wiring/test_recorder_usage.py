"""A reply's usage rides with the session's next message: one store write per model call.

`DbRecorder.add_usage` holds the counters; the next `append_message` of that session carries
them into the same transaction, and ending the session writes what is still held. Nothing is
lost when a write fails, and nothing is counted twice.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from harness.events import Warning
from harness.testing import ScriptedModel, call_tool, make_session, run_turn, say
from harness.tools import RawTool, ToolOutput
from harness.types import Message, ToolSpec, Usage
from harness.wiring.memory_bridge import DbRecorder
from memory import SessionDB, SessionStore, StoredMessage, StoredUsage
from memory.sessions import JournalledWriter


class _Writes:
    """Stands in for the journal in front of the store: records every write it is given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.fail_next = False
        self.gate: anyio.Event | None = None

    async def append_message(
        self, session_id: str, message: StoredMessage, *, usage: StoredUsage | None = None
    ) -> int:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise OSError("the store and the journal both refused")
        self.calls.append(("append", (message.content, usage)))
        return len(self.calls)

    async def add_usage(self, session_id: str, **counts: int) -> None:
        self.calls.append(("usage", counts))

    async def end_session(self, session_id: str, **_: object) -> None:
        self.calls.append(("end", session_id))


def recorder() -> tuple[DbRecorder, _Writes]:
    """A recorder whose writes all go to the fake journal (the store itself is never asked)."""
    writes = _Writes()
    rec = DbRecorder(
        cast(SessionStore, None), source="test", clock=lambda: 1.0, journal=cast(JournalledWriter, writes)
    )
    return rec, writes


def usage(n: int) -> Usage:
    return Usage(input=n, output=n + 1)


async def test_held_usage_goes_with_the_next_message_and_covers_every_call() -> None:
    rec, writes = recorder()
    await rec.add_usage("s1", usage(10))
    await rec.add_usage("s1", usage(1))  # an empty reply asked again: two calls, one message
    assert writes.calls == []  # nothing written yet
    await rec.append_message("s1", Message("assistant", "the answer"), token_count=3)
    await rec.append_message("s1", Message("user", "thanks"), token_count=2)
    assert writes.calls == [
        ("append", ("the answer", StoredUsage(input=11, output=13, api_calls=2))),
        ("append", ("thanks", None)),
    ]


async def test_ending_a_session_writes_what_is_still_held() -> None:
    rec, writes = recorder()
    await rec.add_usage("s1", usage(5))
    await rec.add_usage("s2", usage(7))  # another session's usage waits for its own writes
    await rec.end_session("s1", reason="user_exit")
    counts = {"input": 5, "output": 6, "cache_read": 0, "cache_write": 0, "reasoning": 0, "api_calls": 1}
    assert writes.calls == [("usage", counts), ("end", "s1")]
    await rec.append_message("s2", Message("assistant", "hi"), token_count=1)
    assert writes.calls[-1] == ("append", ("hi", StoredUsage(input=7, output=8, api_calls=1)))


async def test_a_failed_write_keeps_the_usage_for_the_retry() -> None:
    rec, writes = recorder()
    await rec.add_usage("s1", usage(4))
    writes.fail_next = True
    with pytest.raises(OSError):
        await rec.append_message("s1", Message("assistant", "first try"), token_count=1)
    await rec.append_message("s1", Message("assistant", "first try"), token_count=1)
    assert writes.calls == [("append", ("first try", StoredUsage(input=4, output=5, api_calls=1)))]


async def test_usage_added_while_a_message_is_written_waits_for_the_next_write() -> None:
    rec, writes = recorder()
    await rec.add_usage("s1", usage(1))
    writes.gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(rec.append_message, "s1", Message("assistant", "reply"), token_count=1))
        await anyio.wait_all_tasks_blocked()
        await rec.add_usage("s1", usage(100))  # a background call finished meanwhile
        writes.gate.set()
    writes.gate = None
    await rec.append_message("s1", Message("user", "next"), token_count=1)
    assert writes.calls == [
        ("append", ("reply", StoredUsage(input=1, output=2, api_calls=1))),
        ("append", ("next", StoredUsage(input=100, output=101, api_calls=1))),
    ]


async def test_a_turn_writes_each_message_once_with_its_usage_in_the_same_transaction(tmp_path: Path) -> None:
    db = await SessionDB.open(tmp_path / "state.db")
    store: SessionStore = db
    model = ScriptedModel(
        [say("one", usage=Usage(input=30, output=4)), say("two", usage=Usage(input=50, output=6))]
    )
    try:
        async with make_session(model, recorder=DbRecorder(db, source="test")) as s:
            await run_turn(s, "first")
            before = db.write_batches
            await run_turn(s, "second")
            assert db.write_batches - before == 1  # the user message and the reply with its usage
            session = await store.get_session(s.session_id)
    finally:
        await db.aclose()
    assert session is not None
    assert (session.input_tokens, session.output_tokens, session.api_call_count) == (80, 10, 2)
    assert session.message_count == 4


async def test_a_turn_stores_its_question_and_replies_in_one_transaction(
    tmp_path: Path,
) -> None:
    async def lookup(_: str) -> ToolOutput:
        return ToolOutput("found: row 7")

    tool = RawTool(ToolSpec("lookup", "Look a word up."), lookup)
    model = ScriptedModel(
        [
            say("hello", usage=Usage(input=1, output=1)),
            call_tool("lookup", {}, usage=Usage(input=20, output=3)),
            say("row 7 is bad", usage=Usage(input=40, output=5)),
        ]
    )
    db = await SessionDB.open(tmp_path / "state.db")
    try:
        async with make_session(model, recorder=DbRecorder(db, source="test"), extra_tools=[tool]) as s:
            await run_turn(s, "first")
            before = db.write_batches
            events = await run_turn(s, "which row is bad?")
            # the question, the call, its result and the answer (with both replies' usage) at once
            assert db.write_batches - before == 1
            assert not [e for e in events if isinstance(e, Warning)]
            rows = await db.get_messages(s.session_id)
            session = await db.get_session(s.session_id)
            kept = list(s.transcript)
    finally:
        await db.aclose()
    assert [(r.message.role, r.message.content) for r in rows] == [
        ("user", "first"),
        ("assistant", "hello"),
        ("user", "which row is bad?"),
        ("assistant", ""),
        ("tool", "found: row 7"),
        ("assistant", "row 7 is bad"),
    ]
    assert [m.store_id for m in kept] == [r.id for r in rows]  # each kept message knows its row
    assert session is not None
    assert (session.input_tokens, session.output_tokens, session.api_call_count) == (61, 9, 3)


async def test_a_cancelled_turn_still_stores_what_it_said(tmp_path: Path) -> None:
    started = anyio.Event()

    async def hang(_: str) -> ToolOutput:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    tool = RawTool(ToolSpec("hang", "Never returns."), hang)
    model = ScriptedModel([call_tool("hang", {})])
    db = await SessionDB.open(tmp_path / "state.db")
    try:
        async with make_session(model, recorder=DbRecorder(db, source="test"), extra_tools=[tool]) as s:
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(run_turn, s, "wait for it"))
                await started.wait()
                tg.cancel_scope.cancel()
            rows = await db.get_messages(s.session_id)
    finally:
        await db.aclose()
    # the call was said before the cancel: it is stored (a resume strips a call left without a result)
    assert [(r.message.role, r.message.content) for r in rows] == [("user", "wait for it"), ("assistant", "")]
