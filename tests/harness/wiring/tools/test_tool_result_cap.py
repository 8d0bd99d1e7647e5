"""Long tool results in a real session: capped in the transcript, kept whole in the session
store (SQLite and PostgreSQL), read back by id with `session_search`, and stubbed with
their ids in the summary prompt."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.config import KeelConfig
from harness.events import ToolResultReady
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from memory import PgSessionStore, SessionDB, SessionStore

CAP = 2_000
LOG = "".join(f"step {i:04d}: compiled module_{i} in {i % 7}.{i % 10}s\n" for i in range(900))


def build_log() -> str:
    """The full build log."""
    return LOG


def short_status(part: str) -> str:
    """The status of one part of the build."""
    return f"{part}: " + "ok " * 150


def _cfg(**extra: str) -> KeelConfig:
    return config(limits__tool_result_chars=str(CAP), skills__enabled="false", **extra)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _store(backend: str, request: pytest.FixtureRequest, home: Path) -> SessionStore:
    if backend == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        schema: str = request.getfixturevalue("pg_schema")
        return await PgSessionStore.open(url, schema=schema, pool_size=2)
    return await SessionDB.open(home / "state.db")


def _pointer(text: str) -> tuple[int, int]:
    found = re.search(r"message_id=(\d+) and offset=(\d+)", text)
    assert found is not None, text
    return int(found.group(1)), int(found.group(2))


async def test_a_long_result_is_capped_in_the_transcript_and_read_back_whole_by_its_id(
    home: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    model = ScriptedModel([call_tool("build_log", {}), say("The build compiled 900 modules.")])
    async with await _store(backend, request, home) as store:
        options = SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), session_store=store)
        # compression off: the pages read back would fill the 8K window
        async with open_session(_cfg(compression__enabled="false"), options, tools=[build_log]) as s:
            events = await run_turn(s, "How did the build go?")
            kept = next(m for m in s.transcript if m.role == "tool")
            message_id, offset = _pointer(kept.content)
            # the next request replayed the capped text, not the log
            replayed = next(m for m in model.requests[-1].messages if m.role == "tool")
            assert replayed.content == kept.content
            # the agent reads the rest a page at a time, in the current session
            pages: list[str] = []
            while True:
                model.extend(
                    [call_tool("session_search", {"message_id": message_id, "offset": offset}), say("ok")]
                )
                reply = next(
                    json.loads(e.content)
                    for e in await run_turn(s, "read on")
                    if isinstance(e, ToolResultReady) and e.name == "session_search"
                )
                assert reply["success"] is True, reply
                pages.append(reply["content"])
                if "next_offset" not in reply:
                    break
                offset = reply["next_offset"]
            stored = await store.get_message(message_id)
    assert len(kept.content) <= CAP < len(LOG)
    assert kept.store_id == message_id
    assert [e.content for e in events if isinstance(e, ToolResultReady)] == [LOG]  # the event has it all
    head = kept.content.split("\n[... ")[0]
    assert LOG.startswith(head) and offset > 0
    assert head + "".join(pages) == LOG
    assert len(pages) > 1  # the page size kept each reply under the cap
    assert stored is not None and stored.message.content == LOG and stored.message.tool_name == "build_log"


async def test_a_result_under_the_cap_is_kept_as_it_is_with_its_store_id(home: Path) -> None:
    model = ScriptedModel([call_tool("short_status", {"part": "api"}), say("All ok.")])
    options = SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    async with open_session(_cfg(), options, tools=[short_status]) as s:
        await run_turn(s, "Status of the api?")
        kept = next(m for m in s.transcript if m.role == "tool")
    assert kept.content == short_status("api")
    async with await SessionDB.open(home / "state.db") as db:
        assert kept.store_id is not None
        stored = await db.get_message(kept.store_id)
    assert stored is not None and stored.message.content == kept.content


async def test_the_summary_prompt_carries_stubs_with_message_ids_and_no_tool_output(home: Path) -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = _cfg(
        compression__enabled="false",
        compression__protect_first_n="0",
        compression__protect_last_n="2",
        compression__flush="off",
    )
    options = SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    async with open_session(cfg, options, tools=[build_log, short_status]) as s:
        for part in ("api", "db", "web"):
            model.extend([call_tool("short_status", {"part": part}), say(f"{part} is fine.")])
            await run_turn(s, f"Status of {part}?")
        model.extend([call_tool("build_log", {}), say("Built.")])
        await run_turn(s, "And the build?")
        model.extend([say("Fine.")])
        await run_turn(s, "Thanks.")
        ids = [m.store_id for m in s.transcript if m.role == "tool"]
        model.extend([say("## Goal\nchecked the status")])
        await s.compress()
    summary_request = next(r for r in model.requests if r.purpose == "summary")
    prompt = summary_request.messages[0].content
    assert len(ids) == 4 and all(i is not None for i in ids)
    for i in ids:
        assert f"stored as message {i}]" in prompt
    assert "ok ok ok" not in prompt and "compiled module_" not in prompt
