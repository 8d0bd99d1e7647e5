"""Two users on one home, through real sessions (`open_session`, scripted model, real files):
what alice writes, says and saves is invisible to bob through every tool — also after a
compression and in a subagent — and alice still finds all of it."""

from __future__ import annotations

import json
import stat
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg
import pytest

from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.events import Event, ToolResultReady
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import OpenedSession, SessionOptions, open_session
from harness.wiring.stores import open_sessions
from tests.conftest import on_postgres
from tests.harness.wiring.compressing import BY_HAND, compress_after_four_turns
from tests.harness.wiring.scripts import saves_then

# Sessions on each backend: the default SQLite state.db, or a PostgreSQL schema of the test's own;
# `all-postgres` moves every store there (`storage.backend: postgres`), curated memory included.
Backend = dict[str, str]


@pytest.fixture(params=["sqlite", "postgres", "all-postgres"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """`config()` keyword overrides that put the sessions (or every store) on one backend."""
    if request.param == "sqlite":
        return {}
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("pg_schema")
    if request.param == "all-postgres":
        return on_postgres(url, schema)
    return {"sessions__backend": "postgres", "sessions__url": url, "sessions__pg_schema": schema}


def user_session(
    cfg: KeelConfig, home: Path, model: ScriptedModel, user_id: str
) -> AbstractAsyncContextManager[OpenedSession]:
    """A session of `user_id` on `home`, answered by `model`."""
    return open_session(
        cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), user_id=user_id)
    )


async def one_turn(
    cfg: KeelConfig, home: Path, model: ScriptedModel, user_id: str, message: str
) -> tuple[list[Event], str]:
    """One turn of a fresh session of `user_id`: its events and the system prompt it ran with."""
    async with user_session(cfg, home, model, user_id) as s:
        return await run_turn(s, message), s.prompt.text


def skill_exists(home: Path, backend: Backend, directory: str, path: str) -> bool:
    """A skill file of `directory` (relative to the home): on disk, or a row of `skill_files`."""
    if "storage__url" not in backend:
        return (home / directory / path).exists()
    with psycopg.connect(
        backend["storage__url"], options=f"-c search_path={backend['storage__pg_schema']}"
    ) as conn:
        row = conn.execute(
            "SELECT 1 FROM skill_files WHERE scope = %s AND path = %s", (directory, path)
        ).fetchone()
    return row is not None


def curated_text(home: Path, backend: Backend, directory: str, name: str) -> str | None:
    """MEMORY.md / USER.md of `directory` (relative to the home): its file, or its row; None if missing."""
    if "storage__url" not in backend:
        path = home / directory / name
        return path.read_text(encoding="utf-8") if path.exists() else None
    target = {"MEMORY.md": "memory", "USER.md": "user"}[name]
    with psycopg.connect(
        backend["storage__url"], options=f"-c search_path={backend['storage__pg_schema']}"
    ) as conn:
        row = conn.execute(
            "SELECT text FROM curated_docs WHERE scope = %s AND target = %s AND version > 0",
            (directory, target),
        ).fetchone()
    return None if row is None else str(row[0])


SKILL = """---
name: {name}
description: {description}
---
# Steps
1. {step}
"""

ALICE_TOKEN = "zebracorn"  # a word that occurs nowhere but in alice's conversation


def skill(name: str, description: str, step: str) -> str:
    return SKILL.format(name=name, description=description, step=step)


def results(events: list[Event]) -> list[dict[str, object]]:
    """Each tool result of a turn, parsed."""
    out: list[dict[str, object]] = []
    for ev in events:
        if isinstance(ev, ToolResultReady):
            parsed = json.loads(ev.content)
            assert isinstance(parsed, dict)
            out.append(parsed)
    return out


async def alice_writes_everything(home: Path, cfg: KeelConfig) -> str:
    """Alice's session: a USER.md entry, a MEMORY.md entry, a skill, and a conversation."""
    model = ScriptedModel(
        [
            call_tool(
                "memory", {"action": "add", "target": "user", "content": "Alice's cat is called Mittens"}
            ),
            call_tool(
                "memory",
                {"action": "add", "target": "memory", "content": "Alice's repo builds with frobnicate"},
            ),
            call_tool(
                "skill_manage",
                {
                    "action": "create",
                    "name": "alice-deploy",
                    "content": skill("alice-deploy", "Alice ships", "run ship.sh"),
                },
            ),
            say(f"Noted, and the codename is {ALICE_TOKEN}."),
        ]
    )
    async with user_session(cfg, home, model, "alice") as s:
        await run_turn(s, f"Remember my cat Mittens; our codename is {ALICE_TOKEN}.")
        return s.session_id


async def test_bob_sees_none_of_alices_memory_sessions_or_skills_through_any_tool(
    home: Path, backend: Backend
) -> None:
    cfg = config(**backend)
    alice_sid = await alice_writes_everything(home, cfg)
    async with open_sessions(cfg, home) as db:
        alice_msgs = await db.get_messages(alice_sid)
    alice_msg_id = alice_msgs[0].id

    bob = ScriptedModel(
        [
            call_tool("session_search", {"query": ALICE_TOKEN}),
            call_tool("session_search", {}),
            call_tool("session_search", {"session_id": alice_sid}),
            call_tool("session_search", {"session_id": "no-such-session"}),
            call_tool("session_search", {"session_id": alice_sid, "around_message_id": alice_msg_id}),
            call_tool("session_search", {"session_id": alice_sid, "around_message_id": 987654}),
            call_tool("skills_list", {}),
            call_tool("skill_view", {"name": "alice-deploy"}),
            call_tool("skill_manage", {"action": "delete", "name": "alice-deploy"}),
            call_tool("memory", {"action": "remove", "target": "user", "old_text": "Mittens"}),
            call_tool(
                "memory", {"action": "replace", "target": "memory", "old_text": "frobnicate", "content": "x"}
            ),
            say("Nothing of hers here."),
        ]
    )
    events, bob_prompt = await one_turn(cfg, home, bob, "bob", "What do you know?")
    (
        found,
        browse,
        read,
        read_missing,
        scroll,
        scroll_missing,
        listed,
        view,
        delete,
        mem_remove,
        mem_replace,
    ) = results(events)
    assert found["success"] is True and found["count"] == 0
    assert browse["count"] == 0
    # another user's ids answer exactly like ids that do not exist
    assert read["success"] is False
    assert read["error"] == str(read_missing["error"]).replace("no-such-session", alice_sid)
    assert scroll["error"] == str(scroll_missing["error"]).replace("987654", str(alice_msg_id))
    assert listed["count"] == 0
    assert view["success"] is False and "no skill" in str(view["error"])
    assert delete["success"] is False
    assert mem_remove["success"] is False and mem_replace["success"] is False
    for text in ("Mittens", "frobnicate", "alice-deploy", ALICE_TOKEN):
        assert text not in bob_prompt
        assert all(text not in r.system for r in bob.requests)
    # nothing of alice's was touched, and it all sits in her own directories
    assert skill_exists(home, backend, "users/alice/skills", "alice-deploy/SKILL.md")
    assert "Mittens" in (curated_text(home, backend, "users/alice/memories", "USER.md") or "")
    assert "frobnicate" in (curated_text(home, backend, "users/alice/memories", "MEMORY.md") or "")
    assert curated_text(home, backend, "memories", "MEMORY.md") is None
    assert not (home / "memories").exists() and not (home / "skills").exists()

    # alice, in a new session, finds all of it
    again = ScriptedModel([call_tool("session_search", {"query": ALICE_TOKEN}), say("found")])
    events, prompt = await one_turn(cfg, home, again, "alice", "What was our codename?")
    [mine] = results(events)
    assert mine["count"] == 1
    assert "Mittens" in prompt and "frobnicate" in prompt and "alice-deploy" in prompt


async def test_the_child_session_after_compression_keeps_the_users_scope(
    home: Path, backend: Backend
) -> None:
    long = " ".join(["kettle"] * 60)
    cfg = config(**BY_HAND, **backend)
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with user_session(cfg, home, model, "alice") as s:
        parent, child = await compress_after_four_turns(
            s,
            model,
            question=f"tell me about the {ALICE_TOKEN}",
            answer=f"the {ALICE_TOKEN} answer",
            filler=long,
        )
        model.extend([say(f"after compression, {ALICE_TOKEN} again")])
        await run_turn(s, f"and the {ALICE_TOKEN} now?")
        model.extend([call_tool("session_search", {"query": ALICE_TOKEN}), say("found")])
        own = results(await run_turn(s, "search it"))
    assert child != parent
    async with open_sessions(cfg, home) as db:
        rows = {sid: await db.get_session(sid) for sid in (parent, child)}
    assert {sid: (r.user_id if r else None) for sid, r in rows.items()} == {parent: "alice", child: "alice"}
    assert own[0]["count"] == 1  # the compressed-away parent is alice's to search

    bob = ScriptedModel(
        [call_tool("session_search", {"query": ALICE_TOKEN}), call_tool("session_search", {}), say("-")]
    )
    async with user_session(cfg, home, bob, "bob") as s:
        found, browse = results(await run_turn(s, "anything?"))
    assert found["count"] == 0 and browse["count"] == 0


async def test_a_subagent_runs_for_the_same_principal(home: Path, backend: Backend) -> None:
    cfg = config(**backend)
    workspace_memory = home / "workspaces" / "web" / "memories" / "MEMORY.md"
    workspace_memory.parent.mkdir(parents=True)
    workspace_memory.write_text("The web build uses bazel", encoding="utf-8")
    model = ScriptedModel(
        [
            say("parent turn"),
            call_tool(
                "memory", {"action": "add", "target": "memory", "content": "subagent saw the web build"}
            ),
            say("sub done"),
        ]
    )
    async with open_session(
        cfg,
        SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), user_id="alice", workspace="web"),
    ) as s:
        await run_turn(s, "hi")
        await s.delegate("note the build")
    assert s.handles.principal.user_id == "alice"
    async with open_sessions(cfg, home) as db:
        sessions = await db.list_sessions(10)
    assert {(r.source, r.user_id) for r in sessions} == {("cli", "alice"), ("subagent", "alice")}
    # the subagent saw the workspace's MEMORY.md, and (agent_context subagent) wrote nothing anywhere
    workspace = curated_text(home, backend, "workspaces/web/memories", "MEMORY.md")
    if "storage__url" not in backend:  # the seeded file is the files backend's workspace memory
        assert "The web build uses bazel" in model.requests[1].system
        assert workspace == "The web build uses bazel"
    else:
        assert workspace is None
    assert curated_text(home, backend, "memories", "MEMORY.md") is None
    assert curated_text(home, backend, "users/alice/memories", "MEMORY.md") is None


def fact_scopes(home: Path, backend: Backend) -> set[str]:
    """The users with holographic facts: their `memory_store.db` files, or their rows' scopes."""
    if "storage__url" not in backend:
        return {p.parent.relative_to(home).as_posix() for p in home.rglob("memory_store.db")}
    with psycopg.connect(
        backend["storage__url"], options=f"-c search_path={backend['storage__pg_schema']}"
    ) as conn:
        return {str(r[0]) for r in conn.execute("SELECT DISTINCT scope FROM holo_facts")}


async def test_holographic_facts_are_kept_and_recalled_per_user(home: Path, backend: Backend) -> None:
    cfg = config(memory__provider="holographic", **backend)
    alice = saves_then("user", "Alice drinks oolong tea every morning", "Noted.", "You drink oolong.")
    async with user_session(cfg, home, alice, "alice") as s:
        await run_turn(s, "Remember: I drink oolong tea every morning.")
        await run_turn(s, "Which tea do I drink in the morning?")
    recalled = alice.requests[-1].messages[-1].api_content or ""
    assert "oolong" in recalled  # recall works for its owner ...
    assert fact_scopes(home, backend) == {"users/alice"}
    if "storage__url" in backend:
        assert not await anyio.to_thread.run_sync(lambda: list(home.rglob("memory_store.db")))

    bob = ScriptedModel(
        [say("No idea."), call_tool("fact_store", {"action": "search", "query": "oolong tea"}), say("-")]
    )
    async with user_session(cfg, home, bob, "bob") as s:
        await run_turn(s, "Which tea do I drink in the morning?")
        events = await run_turn(s, "search the facts for tea")
    assert all(
        "oolong" not in (m.api_content or m.content)
        for r in bob.requests
        for m in r.messages
        if m.role == "user"
    )
    assert all("oolong" not in json.dumps(r) for r in results(events))


async def test_traces_go_to_the_users_own_owner_only_directory(home: Path) -> None:
    async with open_session(
        config(),
        SessionOptions(
            model=ScriptedModel([say("hi")]), home=home, tokenizer=FakeTokenizer(), user_id="alice"
        ),
    ) as s:
        await run_turn(s, "hello")
    trace = s.handles.trace_path
    assert trace is not None and trace.parent == home / "traces" / "users" / "alice"
    assert trace.exists()
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert stat.S_IMODE(trace.parent.stat().st_mode) == 0o700


async def test_a_shared_workspace_is_read_only_for_everyone_else(home: Path) -> None:
    team = home / "workspaces" / "team"
    (team / "memories").mkdir(parents=True)
    (team / "memories" / "MEMORY.md").write_text("Releases ship on Thursdays\n", encoding="utf-8")
    (team / "skills" / "release").mkdir(parents=True)
    (team / "skills" / "release" / "SKILL.md").write_text(
        skill("release", "How the team cuts a release", "tag and push"), encoding="utf-8"
    )
    cfg = config(scope__shared_workspace="team")
    model = ScriptedModel(
        [
            call_tool("skills_list", {}),
            call_tool("skill_view", {"name": "release"}),
            call_tool(
                "skill_manage", {"action": "patch", "name": "release", "old_string": "tag", "new_string": "x"}
            ),
            call_tool("memory", {"action": "remove", "target": "memory", "old_text": "Thursdays"}),
            say("ok"),
        ]
    )
    events, prompt = await one_turn(cfg, home, model, "alice", "what does the team do?")
    listed, view, patch, remove = results(events)
    assert "SHARED MEMORY (workspace team, read-only)" in prompt and "Releases ship on Thursdays" in prompt
    assert "release — How the team cuts a release" in prompt
    assert listed["skills"] == [
        {
            "name": "release",
            "category": "general",
            "description": "How the team cuts a release",
            "files": 0,
            "shared": True,
        }
    ]
    assert view["success"] is True and view["shared"] is True
    assert patch["success"] is False and "read-only" in str(patch["error"])
    assert remove["success"] is False
    assert (team / "memories" / "MEMORY.md").read_text(encoding="utf-8") == "Releases ship on Thursdays\n"
    assert "tag and push" in (team / "skills" / "release" / "SKILL.md").read_text(encoding="utf-8")


async def test_open_session_refuses_an_unsafe_user_id_before_writing_anything(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"user id '\.\./bob' is not a safe directory name"):
        async with open_session(
            config(), SessionOptions(model=ScriptedModel([]), home=home, user_id="../bob")
        ):
            pass
    assert await anyio.to_thread.run_sync(lambda: list(home.iterdir())) == []


async def test_a_session_for_an_id_differing_only_in_case_from_an_existing_user_is_refused(
    home: Path,
) -> None:
    (home / "users" / "alice").mkdir(parents=True)
    opts = SessionOptions(model=ScriptedModel([]), home=home, tokenizer=FakeTokenizer(), user_id="Alice")
    with pytest.raises(ValueError, match="differs only in case"):
        async with open_session(config(), opts):
            pass
    assert sorted(p.name for p in (home / "users").iterdir()) == ["alice"]
