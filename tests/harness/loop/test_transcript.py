"""The transcript against a real state.db that another process holds locked: no message is
lost, the turn goes on with one warning, and the queued rows land in order afterwards; and
when a turn's deferred rows are written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from harness.events import Warning
from harness.loop.transcript import Transcript
from harness.testing import RecordingRecorder, ScriptedModel, call_tool, config, make_session, run_turn, say
from harness.tools import RawTool, ToolOutput
from harness.types import Message, ToolCall, ToolSpec
from harness.wiring.memory_bridge import DbRecorder
from memory import LockRetryPolicy, SessionDB
from tests.memory.sessions.lockholder import exclusive_lock


async def test_a_locked_store_keeps_every_message_and_saves_them_in_order_when_it_frees(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    db = await SessionDB.open(path, retry=LockRetryPolicy(busy_timeout_s=0.05, attempts=2, backoff_s=0.01))
    model = ScriptedModel([say("one"), say("two"), say("three")])
    try:
        async with make_session(model, recorder=DbRecorder(db, source="test")) as s:
            await run_turn(s, "before the lock")
            async with exclusive_lock(path, mode="IMMEDIATE"):
                locked = await run_turn(s, "while it is locked")
                warnings = [e.message for e in locked if isinstance(e, Warning)]
                assert len(warnings) >= 1 and "kept in memory" in warnings[0]
                assert s.transcript[-1].content == "two"  # the turn went on
                assert [m.message.content for m in await db.get_messages(s.session_id)] == [
                    "before the lock",
                    "one",
                ]
            after = await run_turn(s, "after the lock")
            assert not [e for e in after if isinstance(e, Warning)]
            stored = [m.message.content for m in await db.get_messages(s.session_id)]
    finally:
        await db.aclose()
    assert stored == ["before the lock", "one", "while it is locked", "two", "after the lock", "three"]


async def test_a_long_tool_result_that_the_store_refuses_is_capped_without_a_pointer_and_saved_whole_later(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    db = await SessionDB.open(path, retry=LockRetryPolicy(busy_timeout_s=0.05, attempts=2, backoff_s=0.01))
    full = "".join(f"line {i}\n" for i in range(2_000))

    async def dump(_: str) -> ToolOutput:
        return ToolOutput(full)

    tool = RawTool(ToolSpec("dump", "Dump the log."), dump)
    model = ScriptedModel([say("one"), call_tool("dump", {}), say("dumped"), say("three")])
    cfg = config(limits__tool_result_chars="1000")
    try:
        async with make_session(
            model, cfg=cfg, recorder=DbRecorder(db, source="test"), extra_tools=[tool]
        ) as s:
            await run_turn(s, "before the lock")
            async with exclusive_lock(path, mode="IMMEDIATE"):
                await run_turn(s, "dump the log")
            kept = next(m for m in s.transcript if m.role == "tool")
            await run_turn(s, "after the lock")
            stored = [m.message.content for m in await db.get_messages(s.session_id)]
    finally:
        await db.aclose()
    assert kept.store_id is None and len(kept.content) <= 1_000
    assert "cannot be read back" in kept.content and "message_id" not in kept.content
    assert full in stored  # nothing lost: the whole output was saved once the lock went
    assert kept.content not in stored


async def test_deferred_rows_wait_for_the_turns_end_unless_they_have_waited_long_enough() -> None:
    written = anyio.Event()

    class Recorder(RecordingRecorder):
        async def append_messages(self, *args: Any, **kwargs: Any) -> list[int]:
            ids = await super().append_messages(*args, **kwargs)
            written.set()
            return ids

    recorder = Recorder()
    transcript = Transcript(
        recorder,
        new_id=lambda: "s1",
        model_name="m",
        count=lambda _: 1,
        warn=lambda _: None,
        save_after_s=0.2,
    )
    await transcript.open()
    await transcript.append(Message("user", "before the turn"))  # outside a turn: written at once
    await transcript.append(Message("user", "question"), defer=True)
    await transcript.append(
        Message("assistant", "", tool_calls=(ToolCall("c1", "lookup", "{}"),)), defer=True
    )
    await transcript.append(Message("tool", "found", tool_call_id="c1", name="lookup"), defer=True)
    assert [m.content for m in recorder.messages["s1"]] == ["before the turn"]
    assert transcript.unsaved == 3  # they wait for the turn's end
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(transcript.keep_saved)  # a slow turn: they have waited long enough
            await written.wait()
            tg.cancel_scope.cancel()
    assert transcript.unsaved == 0
    assert recorder.batches == [("s1", 3)]  # in one transaction
    assert [m.store_id for m in transcript.messages] == [1, 2, 3, 4]
    await transcript.append(Message("assistant", "row 7"), defer=True)
    assert await transcript.save()  # the turn's end
    assert [m.content for m in recorder.messages["s1"]][-1] == "row 7"


async def test_a_child_whose_row_was_made_but_whose_messages_were_refused_gets_them_later() -> None:
    class Refusing(RecordingRecorder):
        refuse = True

        async def append_messages(self, *args: Any, **kwargs: Any) -> list[int]:
            if self.refuse:
                self.refuse = False
                raise OSError("disk full")
            return await super().append_messages(*args, **kwargs)

    recorder, warnings = Refusing(), list[str]()
    ids = iter(("parent", "child"))
    transcript = Transcript(
        recorder, new_id=lambda: next(ids), model_name="m", count=lambda _: 1, warn=warnings.append
    )
    await transcript.open()
    await transcript.append(Message("user", "hello"))
    await transcript.continue_as_child([Message("user", "summary", summary=True)])
    assert transcript.unsaved == 1 and "refused the compressed session" in warnings[0]
    assert await transcript.save()  # the child row is not made twice (that would be refused forever)
    assert recorder.started == [("parent", None), ("child", "parent")]
    assert [m.content for m in recorder.messages["child"]] == ["summary"]
