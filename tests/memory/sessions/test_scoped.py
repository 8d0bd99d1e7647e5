"""`session_search` for one principal (on each backend): another user's sessions can be neither found, browsed,
read nor scrolled, and their ids answer exactly like ids that do not exist."""

from __future__ import annotations

import json
from typing import Any

from memory import SessionSearchTool, SessionStore, StoredMessage
from memory.sessions._scoped import UserScopedReader

T0 = 1_700_000_000.0


def msg(text: str, at: float, role: str = "user") -> StoredMessage:
    return StoredMessage(role=role, content=text, timestamp=at)  # type: ignore[arg-type]  # literal roles


async def seed(db: SessionStore) -> None:
    """Alice talks about lighthouses a lot, and recently; bob once; a team session once."""
    for i in range(40):
        sid = f"alice-{i:02d}"
        await db.create_session(sid, source="cli", started_at=T0 + 100 + i, user_id="alice")
        await db.append_messages(
            sid,
            [
                msg(f"the lighthouse lens number {i}", T0 + 100 + i),
                msg("Polish it.", T0 + 100.5 + i, "assistant"),
            ],
        )
    await db.create_session("bob-1", source="cli", started_at=T0, user_id="bob")
    await db.append_messages(
        "bob-1", [msg("a lighthouse on bob's island", T0 + 1), msg("Nice.", T0 + 2, "assistant")]
    )
    await db.create_session("team-1", source="cli", started_at=T0 + 3, user_id="team")
    await db.append_messages("team-1", [msg("the team's lighthouse runbook", T0 + 4)])


async def call(tool: SessionSearchTool, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = json.loads(await tool.handle(arguments))
    assert isinstance(reply, dict)
    return reply


def bobs(db: SessionStore, *extra: str) -> SessionSearchTool:
    return SessionSearchTool(db, current_session_id=lambda: None, user_ids=("bob", *extra), default_limit=10)


async def test_discover_finds_the_users_own_session_however_many_of_another_users_match(
    store: SessionStore,
) -> None:
    await seed(store)
    found = await call(bobs(store), {"query": "lighthouse", "limit": 10})
    assert [r["session_id"] for r in found["results"]] == ["bob-1"]
    assert "lens" not in json.dumps(found)


async def test_browse_lists_only_the_users_sessions(store: SessionStore) -> None:
    await seed(store)
    browse = await call(bobs(store), {"limit": 10})
    assert [s["session_id"] for s in browse["sessions"]] == ["bob-1"]


async def test_reading_or_scrolling_another_users_session_answers_like_a_missing_one(
    store: SessionStore,
) -> None:
    await seed(store)
    tool = bobs(store)
    alice_msg = (await store.get_messages("alice-07"))[0].id
    read = await call(tool, {"session_id": "alice-07"})
    missing = await call(tool, {"session_id": "nobody-07"})
    assert read["success"] is False and read["error"] == missing["error"].replace("nobody-07", "alice-07")
    scroll = await call(tool, {"session_id": "alice-07", "around_message_id": alice_msg})
    gone = await call(tool, {"session_id": "alice-07", "around_message_id": 10**9})
    assert scroll["success"] is False and scroll["error"] == gone["error"].replace(str(10**9), str(alice_msg))
    bare = await call(tool, {"around_message_id": alice_msg})
    assert bare["success"] is False and "lens" not in json.dumps(bare)
    # bob's own session reads fine
    assert (await call(tool, {"session_id": "bob-1"}))["success"] is True


async def test_shared_users_are_readable_and_no_filter_is_the_operators_view(store: SessionStore) -> None:
    await seed(store)
    found = await call(bobs(store, "team"), {"query": "lighthouse", "limit": 10})
    assert sorted(r["session_id"] for r in found["results"]) == ["bob-1", "team-1"]
    everyone = SessionSearchTool(store, current_session_id=lambda: None, default_limit=10)
    assert len((await call(everyone, {"query": "lighthouse", "limit": 10}))["results"]) == 10


async def test_a_readers_user_never_sees_another_users_lineage_or_where_it_went_on(
    store: SessionStore,
) -> None:
    # alice's conversation was compressed twice: root → middle → newest
    await store.create_session("a-root", source="cli", started_at=T0, user_id="alice")
    await store.create_session(
        "a-mid", source="cli", started_at=T0 + 1, parent_session_id="a-root", user_id="alice"
    )
    await store.create_session(
        "a-new", source="cli", started_at=T0 + 2, parent_session_id="a-mid", user_id="alice"
    )
    await store.create_session("b-root", source="cli", started_at=T0 + 3, user_id="bob")
    await store.create_session(
        "b-next", source="cli", started_at=T0 + 4, parent_session_id="b-root", user_id="bob"
    )
    # a child the store was told belongs to bob, though its parent is alice's
    await store.create_session(
        "b-odd", source="cli", started_at=T0 + 5, parent_session_id="a-new", user_id="bob"
    )
    alice, bob = UserScopedReader(store, ["alice"]), UserScopedReader(store, ["bob"])
    asked = ["a-root", "a-mid", "a-new", "b-root", "b-next", "b-odd", "ghost"]
    # bob: alice's ids answer as ids that do not exist (each its own root, going on nowhere)
    assert await bob.lineage_roots(asked) == {
        "a-root": "a-root",
        "a-mid": "a-mid",
        "a-new": "a-new",
        "b-root": "b-root",
        "b-next": "b-root",
        "b-odd": "b-odd",  # its root is alice's: never told
        "ghost": "ghost",
    }
    assert await bob.lineage_root("a-new") == "a-new"
    assert await store.lineage_root("a-new") == "a-root"  # what bob's reader keeps from him
    assert [await bob.continuation(s) for s in ("a-root", "a-mid", "a-new", "ghost")] == [None] * 4
    assert await bob.continuation("b-root") == "b-next"
    # alice sees her own lineage whole, and never bob's child of her session
    assert await alice.lineage_root("a-new") == "a-root"
    assert await alice.lineage_roots(["a-mid", "b-next", "b-odd"]) == {
        "a-mid": "a-root",
        "b-next": "b-next",
        "b-odd": "b-odd",
    }
    assert await alice.continuation("a-root") == "a-mid" and await alice.continuation("a-mid") == "a-new"
    assert await alice.continuation("a-new") is None  # its newest child is bob's
    assert await store.continuation("a-new") == "b-odd"  # the unscoped store is the operator's view
