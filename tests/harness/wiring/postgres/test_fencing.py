"""A worker that loses its lease with its connection stops writing: the fence, for real.

Worker A's turn is inside a tool call when its lease connection is killed on the server
(`pg_terminate_backend`): the server frees the advisory lock and A is not told. Worker B
resumes the session and runs a whole turn. When A's tool returns, every write A makes is
refused (`SessionFencedError`) instead of landing behind B's turn, so the stored session
never has A's tool result after B's messages, and a later resume sends a history every
endpoint accepts. A journal written under the lost lease is set aside, never replayed.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import psycopg

from harness.events import Warning
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from memory import SessionDB
from memory.lease import lease_key
from memory.sessions import JOURNAL_DIR_NAME, replay_journals
from memory.sessions.postgres import PgSessionStore
from tests.conftest import on_postgres


def pg_config(url: str, schema: str):  # type: ignore[no-untyped-def]  # KeelConfig
    return config(**on_postgres(url, schema), storage__lease_wait_s="5")


def kill_lease_connection(url: str, schema: str, lineage: str) -> int:
    """Terminate the backend holding `lineage`'s advisory lock; how many were terminated."""
    key = lease_key(schema, lineage) & 0xFFFFFFFFFFFFFFFF
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND classid = %s AND objid = %s AND objsubid = 1 AND granted",
            (key >> 32, key & 0xFFFFFFFF),
        ).fetchall()
    return len(rows)


async def test_a_worker_that_lost_its_lease_mid_turn_never_writes_behind_the_next_workers_turn(
    tmp_path: Path, postgres_url: str, pg_schema: str
) -> None:
    cfg = pg_config(postgres_url, pg_schema)
    # Threading events: an async tool runs on keel's tool loop, another thread (`harness.tools.workers`).
    lost, b_done = threading.Event(), threading.Event()
    lineage: list[str] = []

    async def slow_lookup(query: str) -> str:
        """Look something up (slowly)."""
        assert kill_lease_connection(postgres_url, pg_schema, lineage[0]) == 1
        lost.set()
        await anyio.to_thread.run_sync(b_done.wait, 60)
        return f"found {query}"

    model_a = ScriptedModel(
        [say("first answer"), call_tool("slow_lookup", {"query": "x"}), say("A's answer")]
    )
    options_a = SessionOptions(
        model=model_a, home=tmp_path / "a", tokenizer=FakeTokenizer(), tools=(slow_lookup,)
    )
    model_b = ScriptedModel([say("B's answer")])
    events_a: list[object] = []
    async with open_session(cfg, options_a) as a:
        await run_turn(a, "hello")
        lineage.append(a.session_id)

        async def turn_a() -> None:
            events_a.extend(await run_turn(a, "look it up"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn_a)
            assert await anyio.to_thread.run_sync(lost.wait, 60)
            options_b = SessionOptions(
                model=model_b, home=tmp_path / "b", tokenizer=FakeTokenizer(), resume=a.session_id
            )
            async with open_session(cfg, options_b) as b:
                await run_turn(b, "B asks")
            b_done.set()
        session_id = a.session_id
    fenced = [e.message for e in events_a if isinstance(e, Warning) and "lost the lease" in e.message]
    assert fenced, events_a

    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        stored = [(r.message.role, r.message.content) for r in await store.get_messages(session_id)]
    b_turn = stored.index(("user", "B asks"))
    after_b = stored[b_turn:]
    assert after_b == [("user", "B asks"), ("assistant", "B's answer")]  # nothing of A's behind B's turn
    assert ("tool", "found x") not in stored and ("assistant", "A's answer") not in stored

    # A third worker resumes: no tool call is followed by anything but its result.
    later = ScriptedModel([say("ok")])
    options_c = SessionOptions(model=later, home=tmp_path / "c", tokenizer=FakeTokenizer(), resume=session_id)
    async with open_session(cfg, options_c) as c:
        await run_turn(c, "and now?")
    sent = later.requests[0].messages
    for i, m in enumerate(sent):
        if m.tool_calls:
            assert sent[i + 1].role == "tool", [(x.role, x.content) for x in sent]


async def test_a_journal_written_under_a_lost_lease_is_set_aside_and_reported_not_replayed(
    tmp_path: Path, postgres_url: str, pg_schema: str
) -> None:
    cfg = pg_config(postgres_url, pg_schema)
    async with open_session(
        cfg, SessionOptions(model=ScriptedModel([say("hi")]), home=tmp_path / "a", tokenizer=FakeTokenizer())
    ) as a:
        await run_turn(a, "hello")
        session_id = a.session_id
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        identity = store.identity
    with psycopg.connect(postgres_url, options=f"-c search_path={pg_schema}") as conn:
        token, holder = conn.execute(
            "SELECT token, holder FROM session_fences WHERE lineage = %s", (session_id,)
        ).fetchone() or (0, "")
    # A journal A's outage left, made under that lease; then another worker ran a turn.
    journal = tmp_path / "a" / JOURNAL_DIR_NAME
    journal.mkdir(exist_ok=True)
    lines = [
        {"kind": "header", "location": "elsewhere", "identity": identity},
        {
            "kind": "messages",
            "session_id": session_id,
            "messages": [{"role": "tool", "content": "late result", "timestamp": 1.0, "tool_call_id": "c1"}],
            "fence": {"lineage": session_id, "token": token, "holder": holder},
        },
    ]
    (journal / "20260101_000000_1_late.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    other = SessionOptions(
        model=ScriptedModel([say("B")]), home=tmp_path / "b", tokenizer=FakeTokenizer(), resume=session_id
    )
    async with open_session(cfg, other) as b:
        await run_turn(b, "B asks")
    warned: list[str] = []
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        assert await replay_journals(journal, store, warn=warned.append) == 0
        contents = [r.message.content for r in await store.get_messages(session_id)]
    assert "late result" not in contents
    assert (journal / "fenced" / "20260101_000000_1_late.jsonl").exists()
    assert any("another worker has taken since" in w for w in warned), warned


async def test_a_journal_is_replayed_through_another_spelling_of_the_same_server_and_others_are_reported(
    tmp_path: Path, postgres_url: str, pg_schema: str
) -> None:
    info = psycopg.conninfo.conninfo_to_dict(postgres_url)
    if info.get("host") not in ("127.0.0.1", "localhost"):
        return  # the spellings below name a local server
    other_host = "localhost" if info.get("host") == "127.0.0.1" else "127.0.0.1"
    respelled = postgres_url.replace(f"@{info.get('host')}", f"@{other_host}", 1)
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        await store.create_session("s1", source="cli", started_at=1.0)
        identity, location = store.identity, store.location
    journal = tmp_path / JOURNAL_DIR_NAME
    journal.mkdir()
    write = {
        "kind": "messages",
        "session_id": "s1",
        "messages": [{"role": "user", "content": "kept", "timestamp": 2.0}],
    }
    header = {"kind": "header", "location": location, "identity": identity}
    (journal / "1_ours.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(write) + "\n")
    elsewhere = {
        "kind": "header",
        "location": "postgresql://x@db.example/other",
        "identity": "postgresql system 1 database other schema keel",
    }
    (journal / "2_theirs.jsonl").write_text(json.dumps(elsewhere) + "\n" + json.dumps(write) + "\n")
    warned: list[str] = []
    async with await PgSessionStore.open(respelled, schema=pg_schema) as store:
        assert store.identity == identity and store.location != location
        await replay_journals(journal, store, warn=warned.append)
        assert [r.message.content for r in await store.get_messages("s1")] == ["kept"]
    assert not (journal / "1_ours.jsonl").exists()
    assert (journal / "2_theirs.jsonl").exists()
    assert any("2_theirs.jsonl" in w and "journalled for another store" in w for w in warned), warned
    async with await SessionDB.open(tmp_path / "state.db") as db:  # a home's file is another store
        warned.clear()
        await replay_journals(journal, db, warn=warned.append)
    assert any("2_theirs.jsonl" in w for w in warned)
