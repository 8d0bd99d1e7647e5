"""Sessions carry a user scope: the store keeps it, and list/search filter by it in the query.

Every test runs on both backends (the `store` fixture).
"""

from __future__ import annotations

import pytest

from memory import SessionStore, StoredMessage
from memory.sessions import MatchMode, SearchRoute
from memory.sessions._ranking import RANK_BUDGET

T0 = 1_700_000_000.0


def say(text: str, at: float, role: str = "user") -> StoredMessage:
    return StoredMessage(role=role, content=text, timestamp=at)  # type: ignore[arg-type]  # literal roles


async def two_users(db: SessionStore) -> None:
    await db.create_session("a1", source="cli", started_at=T0, user_id="alice")
    await db.append_messages(
        "a1", [say("the lighthouse keeper's logbook", T0 + 1), say("黒い灯台守の日誌", T0 + 2)]
    )
    await db.create_session("b1", source="cli", started_at=T0 + 10, user_id="bob")
    await db.append_messages(
        "b1", [say("the lighthouse on bob's island", T0 + 11), say("灯台守の家", T0 + 12)]
    )
    await db.create_session("d1", source="cli", started_at=T0 + 20)
    await db.append_message("d1", say("a lighthouse for the default user", T0 + 21))


async def test_a_session_keeps_the_user_it_was_created_for(store: SessionStore) -> None:
    db = store
    await two_users(db)
    assert [(s.id, s.user_id) for s in await db.list_sessions()] == [
        ("d1", ""),
        ("b1", "bob"),
        ("a1", "alice"),
    ]
    record = await db.get_session("a1")
    assert record is not None and record.user_id == "alice"


async def test_a_child_session_keeps_the_user_its_creator_gives_it(store: SessionStore) -> None:
    db = store
    await db.create_session("p", source="cli", started_at=T0, user_id="alice")
    await db.create_session("c", source="cli", started_at=T0 + 1, parent_session_id="p", user_id="alice")
    # The store does not second-guess its caller: a child given another user keeps it.
    await db.create_session("x", source="cli", started_at=T0 + 2, parent_session_id="p", user_id="bob")
    users = {s.id: s.user_id for s in await db.list_sessions()}
    assert users == {"p": "alice", "c": "alice", "x": "bob"}
    assert await db.lineage_root("c") == "p"


async def test_list_sessions_shows_only_the_users_asked_for(store: SessionStore) -> None:
    db = store
    await two_users(db)
    assert [s.id for s in await db.list_sessions(user_ids=["alice"])] == ["a1"]
    assert [s.id for s in await db.list_sessions(user_ids=["bob", ""], order="last_active")] == [
        "d1",
        "b1",
    ]
    assert await db.list_sessions(user_ids=[]) == []
    assert len(await db.list_sessions(user_ids=None)) == 3


@pytest.mark.parametrize("route", ["fts", "trigram", "like"])
async def test_search_never_returns_another_users_text(store: SessionStore, route: SearchRoute) -> None:
    db = store
    await two_users(db)
    matches: tuple[MatchMode, ...] = ("all", "any")
    for match in matches:
        hits = (await db.search("lighthouse", route=route, match=match, user_ids=["alice"])).hits
        assert {h.session_id for h in hits} == {"a1"}
        everyone = (await db.search("lighthouse", route=route, match=match)).hits
        assert {h.session_id for h in everyone} == {"a1", "b1", "d1"}
    cjk = (await db.search("灯台守", user_ids=["bob"])).hits
    assert {h.session_id for h in cjk} == {"b1"}
    assert (await db.search("lighthouse", route=route, user_ids=[])).hits == ()


async def test_another_users_many_newer_matches_cannot_crowd_out_the_callers_own(store: SessionStore) -> None:
    db = store
    await db.create_session("a1", source="cli", started_at=T0, user_id="alice")
    await db.append_message("a1", say("the harbour pilot schedule", T0 + 1))
    await db.create_session("b1", source="cli", started_at=T0 + 10, user_id="bob")
    flood = [say(f"harbour pilot note number {i}", T0 + 11 + i) for i in range(RANK_BUDGET + 50)]
    await db.append_messages("b1", flood)
    routes: tuple[SearchRoute, ...] = ("fts", "trigram", "like")
    for route in routes:
        for limit in (1, 5):
            hits = (await db.search("harbour pilot", route=route, limit=limit, user_ids=["alice"])).hits
            assert [h.session_id for h in hits] == ["a1"], route


async def test_a_bare_string_or_an_overlong_user_id_is_refused_before_anything_happens(
    store: SessionStore,
) -> None:
    with pytest.raises(ValueError, match="sequence of user ids"):
        await store.list_sessions(user_ids="alice")
    with pytest.raises(ValueError, match="sequence of user ids"):
        await store.search("x", user_ids="alice")
    with pytest.raises(ValueError, match="at most 256"):
        await store.create_session("s", source="cli", started_at=T0, user_id="u" * 257)
    assert await store.list_sessions() == []
