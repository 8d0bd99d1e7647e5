"""The session lease across a compression, on two real PostgreSQL lease connections.

A compression inside a turn ends the session row and continues in a child with a new id,
while the turn goes on. A second worker resuming that child must wait for the first
worker's turn to end: the lease is keyed by the lineage root, which parent and child share.
Another user's worker (on either backend) can neither resume nor lease that lineage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from harness.config import KeelConfig
from harness.errors import SessionError
from harness.events import Warning
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import OpenedSession, SessionOptions, open_session
from memory import SessionBusyError
from tests.conftest import on_postgres

LONG = " ".join(["word"] * 60)  # 60 fake tokens


# context 2500 → compression at 1875 fake tokens (small windows use at least 0.75): the
# system prompt and four filled turns stay under it, the fifth message crosses it, so that
# turn compresses before its first model call.
FIFTH_TURN_COMPRESSES = {
    "storage__lease_wait_s": "1",
    "model__context_window": "2500",
    "compression__protect_first_n": "0",
    "compression__protect_last_n": "2",
    "compression__flush": "off",
}


def pg_config(url: str, schema: str) -> KeelConfig:
    return config(**on_postgres(url, schema), **FIFTH_TURN_COMPRESSES)


class Gate:
    """`tool`: `wait_here`, which holds the turn calling it (`inside`) until `release` is set."""

    def __init__(self) -> None:
        self.inside, self.release = anyio.Event(), anyio.Event()

        async def wait_here(note: str) -> str:
            """Wait until the test lets the turn go on."""
            self.inside.set()
            await self.release.wait()
            return f"done {note}"

        self.tool = wait_here


async def four_long_turns(session: OpenedSession, model: ScriptedModel) -> None:
    """Fill the session so that its next long message compresses it."""
    for i in range(4):
        model.extend([say(f"answer {i} {LONG}")])
        await run_turn(session, f"question {i} {LONG}")


@asynccontextmanager
async def held_after_compressing(
    session: OpenedSession, model: ScriptedModel, gate: Gate
) -> AsyncIterator[str]:
    """Fill `session` and run its fifth turn, which compresses and then calls `wait_here`; the
    parent's id while that turn is held inside the tool. The turn is let go on exit."""
    await four_long_turns(session, model)
    parent = session.session_id
    model.extend([say("## Goal\nchat"), call_tool("wait_here", {"note": "x"}), say("finished")])
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, session, f"question 5 {LONG}")
        try:
            with anyio.fail_after(30):
                await gate.inside.wait()  # compressed, and still inside the turn
            yield parent
        finally:
            gate.release.set()


async def test_a_worker_resuming_the_child_waits_for_the_turn_that_compressed_its_parent(
    tmp_path: Path, postgres_url: str, sessions_schema: str
) -> None:
    cfg = pg_config(postgres_url, sessions_schema)
    gate = Gate()
    model = ScriptedModel(tokenizer=FakeTokenizer())
    first = SessionOptions(model=model, home=tmp_path / "a", tokenizer=FakeTokenizer(), tools=(gate.tool,))
    async with open_session(cfg, first) as a:
        async with held_after_compressing(a, model, gate) as parent:
            child = a.session_id
            assert child != parent and a.parent_session_id == parent
            # Another worker (its own stores, its own lease connection) resumes the child.
            other = ScriptedModel([say("interleaved")])
            second = SessionOptions(model=other, home=tmp_path / "b", tokenizer=FakeTokenizer(), resume=child)
            with pytest.raises(SessionBusyError, match=f"session {parent!r} is busy"):
                async with open_session(cfg, second) as b:
                    await run_turn(b, "me too")
            assert other.requests == []  # nothing ran
        turn_five = [m.content for m in a.transcript]
    # Once the turn has ended, the child is free for the other worker, which sees all of it.
    later = ScriptedModel([say("now")])
    third = SessionOptions(model=later, home=tmp_path / "c", tokenizer=FakeTokenizer(), resume=child)
    async with open_session(cfg, third) as c:
        await run_turn(c, "me too")
        assert [m.content for m in c.transcript][: len(turn_five)] == turn_five
    assert [m.content for m in later.requests[0].messages][-2:] == ["finished", "me too"]


async def test_a_worker_holding_the_parent_is_told_where_it_went_on_and_a_resume_follows(
    tmp_path: Path, postgres_url: str, sessions_schema: str
) -> None:
    cfg = pg_config(postgres_url, sessions_schema)
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with open_session(
        cfg, SessionOptions(model=model, home=tmp_path / "a", tokenizer=FakeTokenizer())
    ) as a:
        await four_long_turns(a, model)
        parent = a.session_id
        stale = ScriptedModel([say("forked")])
        held = SessionOptions(model=stale, home=tmp_path / "b", tokenizer=FakeTokenizer(), resume=parent)
        async with open_session(cfg, held) as b:
            model.extend([say("## Goal\nchat"), say("after")])
            await run_turn(a, f"question 5 {LONG}")  # compresses: the parent row ends
            child = a.session_id
            assert child != parent
            with pytest.raises(SessionError, match=f"compressed on another worker and goes on as {child!r}"):
                await run_turn(b, "still there?")
        assert stale.requests == []  # nothing ran, nothing was appended to the ended parent
    later = ScriptedModel([say("yes")])
    again = SessionOptions(model=later, home=tmp_path / "c", tokenizer=FakeTokenizer(), resume=parent)
    async with open_session(cfg, again) as c:
        assert c.session_id == child and c.parent_session_id == parent
        events = await run_turn(c, "still there?")
    assert any(isinstance(e, Warning) and f"goes on as {child!r}" in e.message for e in events)
    assert [m.content for m in later.requests[0].messages][-2:] == ["after", "still there?"]


@pytest.mark.parametrize("backend", ["files", "postgres"])
async def test_another_users_worker_can_neither_resume_nor_lease_a_lineage_it_does_not_own(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    settings = dict(FIFTH_TURN_COMPRESSES)
    if backend == "postgres":
        settings |= on_postgres(
            request.getfixturevalue("postgres_url"), request.getfixturevalue("sessions_schema")
        )
    alice_cfg, bob_cfg = config(scope__user="alice", **settings), config(scope__user="bob", **settings)

    def home(worker: str) -> Path:
        # files: both workers share one home (one state.db, one leases/); postgres: a home each
        return tmp_path / ("home" if backend == "files" else worker)

    gate = Gate()
    model = ScriptedModel(tokenizer=FakeTokenizer())
    mine = SessionOptions(model=model, home=home("a"), tokenizer=FakeTokenizer(), tools=(gate.tool,))
    async with (
        open_session(alice_cfg, mine) as a,
        held_after_compressing(a, model, gate) as parent,  # alice's lease held
    ):
        child = a.session_id
        assert child != parent and await a.handles.db.lineage_root(child) == parent
        # bob's worker: alice's sessions do not exist for him, so he never even waits on her lease
        for target in (parent, child):
            intruder = ScriptedModel([say("leaked")])
            theirs = SessionOptions(model=intruder, home=home("b"), tokenizer=FakeTokenizer(), resume=target)
            with pytest.raises(SessionError, match=f"no session {target!r} for user 'bob'"):
                async with open_session(bob_cfg, theirs) as b:
                    await run_turn(b, "let me in")
            assert intruder.requests == []
        # bob's own conversation runs beside alice's held turn: its lease is its own lineage's
        own = ScriptedModel([say("hi bob")])
        async with open_session(
            bob_cfg, SessionOptions(model=own, home=home("b"), tokenizer=FakeTokenizer())
        ) as b:
            await run_turn(b, "hello")
            assert await b.handles.db.lineage_root(b.session_id) == b.session_id != parent
        assert len(own.requests) == 1
