"""The transcript keeps text in the form every session store keeps it: a NUL (which PostgreSQL
text cannot hold) or a lone surrogate becomes U+FFFD in the live transcript and in the stored
row alike, on both backends — so a resumed session replays what the live one sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.testing import FakeTokenizer, ScriptedModel, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from harness.wiring.stores import open_sessions
from memory import SessionStore


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "sqlite":
        return {}
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("pg_schema")
    return {"sessions__backend": "postgres", "sessions__url": url, "sessions__pg_schema": schema}


async def test_nul_and_lone_surrogates_are_stored_exactly_as_the_transcript_holds_them(
    home: Path, backend: dict[str, str]
) -> None:
    cfg = config(**backend)
    model = ScriptedModel([say("got a\x00b")])
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "x\x00y \ud800 z")
        live = [m.content for m in s.transcript]
        sid = s.session_id
    store: SessionStore
    async with open_sessions(cfg, home) as store:
        stored = [m.message.content for m in await store.get_messages(sid)]
    assert live == ["x\ufffdy \ufffd z", "got a\ufffdb"]
    assert stored == live
    assert model.requests[0].messages[-1].content == live[0]  # the model saw the stored form too
