"""`open_session` with `sessions.backend: postgres`: a real server keeps the sessions, and
`session_search` finds them there; a server that does not answer stops the session early."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from harness.events import ToolResultReady
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from memory import PgSessionStore, SessionStoreUnavailableError


def entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_sessions_live_on_the_server_and_session_search_finds_them(
    home: Path, postgres_url: str, pg_schema: str
) -> None:
    cfg = config(sessions__backend="postgres", sessions__url=postgres_url, sessions__pg_schema=pg_schema)
    first = ScriptedModel([say("Noted: the zeppelin is teal.")])
    async with open_session(cfg, SessionOptions(model=first, home=home, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "Remember that my zeppelin is painted teal.")
        first_id = s.session_id
    second = ScriptedModel([call_tool("session_search", {"query": "zeppelin painted"}), say("It is teal.")])
    async with open_session(cfg, SessionOptions(model=second, home=home, tokenizer=FakeTokenizer())) as s:
        events = await run_turn(s, "What colour is my zeppelin?")
        second_id = s.session_id
    (result,) = [e for e in events if isinstance(e, ToolResultReady)]
    reply = json.loads(result.content)
    assert reply["success"] is True
    assert [r["session_id"] for r in reply["results"]] == [first_id]
    assert "painted teal" in result.content
    assert "state.db" not in entries(home)  # nothing went to SQLite
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        sessions = {s.id: s for s in await store.list_sessions()}
        assert set(sessions) == {first_id, second_id}
        assert sessions[first_id].end_reason == "user_exit"
        roles = [m.message.role for m in await store.get_messages(second_id)]
        assert roles == ["user", "assistant", "tool", "assistant"]


async def test_a_server_that_does_not_answer_stops_the_session_before_anything_runs(home: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://keel:secret@127.0.0.1:{port}/keel"
    cfg = config(sessions__backend="postgres", sessions__url=url, sessions__connect_timeout_s="2")
    model = ScriptedModel([say("never sent")])
    with pytest.raises(SessionStoreUnavailableError) as caught:
        async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())):
            pass
    assert f"postgresql://keel:***@127.0.0.1:{port}/keel" in str(caught.value)
    assert "secret" not in str(caught.value)
    assert "state.db" not in entries(home)
    assert model.remaining == 1  # the model was never asked
