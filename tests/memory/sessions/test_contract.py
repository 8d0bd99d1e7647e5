"""One behavioural suite for both session-store backends (SQLite and a real PostgreSQL server).

Tests taking `store` run once per backend; tests taking `both` give the same writes to a
SQLite store and a PostgreSQL store and compare their answers. Search parity is about
*which* messages match and which query terms each holds; the order of hits may differ
(BM25 on SQLite, `ts_rank_cd` on PostgreSQL — see `memory/sessions/postgres/_search.py`).
"""

from __future__ import annotations

import anyio
import pytest
from pydantic import JsonValue

from memory import (
    SessionConflictError,
    SessionNotFoundError,
    SessionSearchTool,
    SessionStore,
    StoredUsage,
)
from memory.sessions import MatchMode, SearchRoute

from .conftest import Pair
from .messages import T0, msg


async def test_a_session_round_trips_with_every_field(store: SessionStore) -> None:
    await store.create_session("s1", source="cli", model="gpt-5", title="first", started_at=T0, user_id="u1")
    ids = await store.append_messages(
        "s1",
        [
            msg("hello", at=T0 + 1, api_content="hello\n<memory-context>x</memory-context>"),
            msg("", role="assistant", at=T0 + 2, tool_calls='[{"id":"c1","name":"memory"}]', token_count=7),
            msg("ok", role="tool", at=T0 + 3, tool_call_id="c1", tool_name="memory"),
            msg("summary of before", role="assistant", at=T0 + 4, summary=True),
        ],
    )
    assert ids == sorted(ids) and len(set(ids)) == 4
    session = await store.get_session("s1")
    assert session is not None
    assert (session.source, session.model, session.title, session.user_id) == ("cli", "gpt-5", "first", "u1")
    assert (session.message_count, session.last_active_at, session.started_at) == (4, T0 + 4, T0)
    assert (session.ended_at, session.end_reason, session.parent_session_id) == (None, None, None)
    records = await store.get_messages("s1")
    assert [r.seq for r in records] == [0, 1, 2, 3]
    assert [r.id for r in records] == ids
    assert records[0].message.api_content == "hello\n<memory-context>x</memory-context>"
    assert records[1].message.tool_calls == '[{"id":"c1","name":"memory"}]'
    assert records[1].message.token_count == 7
    assert (records[2].message.tool_call_id, records[2].message.tool_name) == ("c1", "memory")
    assert records[3].message.summary is True and records[0].message.summary is False
    assert await store.get_message(ids[2]) == records[2]
    assert await store.get_message(10**12) is None
    assert await store.get_session("nope") is None


async def test_message_slices_by_position_count_end_and_role(store: SessionStore) -> None:
    await store.create_session("s", source="cli", started_at=T0)
    roles = ["user", "assistant"] * 5
    await store.append_messages("s", [msg(f"m{i}", role=r, at=T0 + i) for i, r in enumerate(roles)])
    assert [r.message.content for r in await store.get_messages("s", start_seq=7)] == ["m7", "m8", "m9"]
    assert [r.message.content for r in await store.get_messages("s", limit=2)] == ["m0", "m1"]
    assert [r.message.content for r in await store.get_messages("s", limit=2, from_end=True)] == ["m8", "m9"]
    users = await store.get_messages("s", roles=("user",), limit=3)
    assert [r.message.content for r in users] == ["m0", "m2", "m4"]
    assert await store.get_messages("missing") == []


async def test_errors_name_the_problem_and_change_nothing(store: SessionStore) -> None:
    await store.create_session("s", source="cli", started_at=T0)
    with pytest.raises(SessionConflictError, match="already exists"):
        await store.create_session("s", source="api", started_at=T0 + 1)
    with pytest.raises(SessionNotFoundError, match="'ghost' does not exist"):
        await store.create_session("child", source="cli", started_at=T0, parent_session_id="ghost")
    with pytest.raises(SessionNotFoundError):
        await store.append_message("ghost", msg("x"))
    with pytest.raises(SessionNotFoundError):
        await store.end_session("ghost", reason="user_exit", ended_at=T0)
    with pytest.raises(SessionNotFoundError):
        await store.add_usage("ghost", input=1)
    with pytest.raises(SessionNotFoundError):
        await store.record_flush("ghost", timestamp=T0, mode="cache_safe", saved=[], refused=[], reply="")
    with pytest.raises(ValueError, match="role 'robot' is unknown"):
        await store.append_messages("s", [msg("fine"), msg("bad", role="robot")])
    with pytest.raises(ValueError, match="non-negative"):
        await store.add_usage("s", input=-1)
    with pytest.raises(ValueError, match="non-empty"):
        await store.create_session("", source="cli", started_at=T0)
    session = await store.get_session("s")
    assert session is not None and (session.source, session.message_count) == ("cli", 0)
    assert [s.id for s in await store.list_sessions()] == ["s"]


async def test_ending_usage_and_flushes_are_recorded(store: SessionStore) -> None:
    await store.create_session("s", source="cli", started_at=T0)
    assert await store.end_session("s", reason="compression", ended_at=T0 + 5) is True
    assert await store.end_session("s", reason="user_exit", ended_at=T0 + 9) is False
    await store.add_usage("s", input=10, output=5, cache_read=100, cache_write=7, reasoning=2)
    await store.add_usage("s", input=1, output=1, api_calls=2)
    saved: JsonValue = [{"target": "memory", "content": "likes tea ☕ 茶", "nested": {"n": 1.5, "ok": True}}]
    refused: JsonValue = [{"content": "x", "reason": "blocked"}, None]
    first = await store.record_flush(
        "s", timestamp=T0 + 4, mode="cache_safe", saved=saved, refused=refused, reply="r"
    )
    second = await store.record_flush("s", timestamp=T0 + 4.5, mode="forced", saved=[], refused=[], reply="")
    session = await store.get_session("s")
    assert session is not None
    assert (session.ended_at, session.end_reason) == (T0 + 5, "compression")
    counters = [session.input_tokens, session.output_tokens, session.cache_read_tokens]
    counters += [session.cache_write_tokens, session.reasoning_tokens, session.api_call_count]
    assert counters == [11, 6, 100, 7, 2, 3]
    flushes = await store.list_flushes("s")
    assert [f.id for f in flushes] == [first, second]
    assert (flushes[0].saved, flushes[0].refused, flushes[0].mode, flushes[0].reply) == (
        saved,
        refused,
        "cache_safe",
        "r",
    )
    assert await store.list_flushes("other") == []


async def test_a_reply_and_its_usage_are_stored_in_one_write_or_not_at_all(store: SessionStore) -> None:
    await store.create_session("s", source="cli", started_at=T0)
    await store.add_usage("s", input=1, output=1)
    usage = StoredUsage(input=10, output=5, cache_read=100, cache_write=7, reasoning=2, api_calls=2)
    mid = await store.append_message("s", msg("the answer", role="assistant", at=T0 + 1), usage=usage)
    assert [r.id for r in await store.get_messages("s")] == [mid]
    session = await store.get_session("s")
    assert session is not None
    counters = [session.input_tokens, session.output_tokens, session.cache_read_tokens]
    counters += [session.cache_write_tokens, session.reasoning_tokens, session.api_call_count]
    assert counters == [11, 6, 100, 7, 2, 3]
    assert (session.message_count, session.last_active_at) == (1, T0 + 1)
    with pytest.raises(SessionNotFoundError):
        await store.append_message("ghost", msg("lost"), usage=usage)
    with pytest.raises(ValueError):
        await store.append_message("s", msg("bad usage"), usage=StoredUsage(input=-1))
    again = await store.get_session("s")
    assert again is not None and again.input_tokens == 11 and again.message_count == 1


async def test_lineage_roots_follow_parents_and_unknown_ids_are_their_own_root(store: SessionStore) -> None:
    await store.create_session("root", source="cli", started_at=T0)
    await store.create_session("c1", source="cli", started_at=T0 + 1, parent_session_id="root")
    await store.create_session("c2", source="cli", started_at=T0 + 2, parent_session_id="c1")
    await store.create_session("branch", source="cli", started_at=T0 + 3, parent_session_id="c1")
    await store.create_session("alone", source="cli", started_at=T0 + 4)
    roots = await store.lineage_roots(["c2", "branch", "alone", "ghost", "root", "c2"])
    assert roots == {"c2": "root", "branch": "root", "alone": "alone", "ghost": "ghost", "root": "root"}
    assert await store.lineage_root("c2") == "root"
    assert await store.lineage_roots([]) == {}
    # where a session went on: its newest child
    assert await store.continuation("c1") == "branch"
    assert await store.continuation("c2") is None and await store.continuation("ghost") is None


async def test_sessions_list_newest_first_by_start_or_activity_with_paging(store: SessionStore) -> None:
    for i, sid in enumerate(["a", "b", "c", "d"]):
        await store.create_session(sid, source="cli", started_at=T0 + i)
    await store.append_message("a", msg("late", at=T0 + 100))
    assert [s.id for s in await store.list_sessions()] == ["d", "c", "b", "a"]
    assert [s.id for s in await store.list_sessions(order="last_active")] == ["a", "d", "c", "b"]
    assert [s.id for s in await store.list_sessions(2, 1)] == ["c", "b"]
    assert [s.id for s in await store.list_sessions(exclude=["c", "a"])] == ["d", "b"]
    assert await store.list_sessions(0) == []
    # Equal start times: the session created last comes first.
    await store.create_session("e", source="cli", started_at=T0 + 3)
    assert [s.id for s in await store.list_sessions(2)] == ["e", "d"]


async def test_appends_to_one_session_from_many_tasks_get_consecutive_positions(store: SessionStore) -> None:
    await store.create_session("s", source="cli", started_at=T0)

    async def writer(n: int) -> None:
        for i in range(5):
            await store.append_message("s", msg(f"w{n}-{i}", at=T0 + i))

    async with anyio.create_task_group() as tg:
        for n in range(4):
            tg.start_soon(writer, n)
    records = await store.get_messages("s")
    assert [r.seq for r in records] == list(range(20))
    assert sorted(r.message.content for r in records) == sorted(
        f"w{n}-{i}" for n in range(4) for i in range(5)
    )
    session = await store.get_session("s")
    assert session is not None and session.message_count == 20


async def test_text_that_utf8_or_postgresql_cannot_hold_is_repaired_not_refused(store: SessionStore) -> None:
    await store.create_session("s", source="cli", started_at=T0)
    # A lone surrogate cannot be stored as UTF-8, PostgreSQL text cannot hold NUL: both
    # backends store both as U+FFFD (the same row either way). Everything else is kept.
    mid = await store.append_message("s", msg("before \ud800 middle \x00 after 灯台"))
    assert mid is not None
    record = await store.get_message(mid)
    assert record is not None
    content = record.message.content
    assert content == "before \ufffd middle \ufffd after 灯台"


# ---------------------------------------------------------------------------------- search

CORPUS: dict[str, list[tuple[str, str]]] = {
    "trip": [
        ("user", "I want to plan a zeppelin trip to Lisbon in May"),
        ("assistant", "Booked the zeppelin for the third of May; the hotel is near the harbour."),
        ("user", "Great, add a fado concert on the second evening"),
    ],
    "deploy": [
        ("user", "the deploy script fails with chat-send timeout on staging"),
        ("assistant", "Raise CHAT_SEND_TIMEOUT in my_app.config.ts and rerun deploy.sh"),
        ("tool", "deploy.sh: exit status 0, deployed build 2.2.7 to staging"),
    ],
    "garden": [
        ("user", "My tomatoes are painting the fence red, the plants lean on it"),
        ("assistant", "Tie the tomato plants to stakes; painted fences can stain the leaves."),
        ("user", "Which paints are safe around vegetables?"),
    ],
    "cjk": [
        ("user", "灯台守の日誌を読みたい"),
        ("assistant", "灯台の歴史について話しましょう。東京タワーも見ました"),
        ("user", "Café crème and naïve résumé — accents too"),
    ],
}

QUERIES = [
    "zeppelin",
    "zeppelin May",
    "deploy script",
    "chat-send",
    "my_app.config.ts",
    "2.2.7",
    "tomatoes fence",
    "paint",
    '"deploy script"',
    "zeppelin OR tomatoes",
    "staging NOT timeout",
    "harbour hotel",
    "fado concert evening",
    "灯台守",
    "東京タワー",
    "灯台",
    "résumé",
    "nothing-matches-this",
]


async def fill(store: SessionStore) -> dict[int, int]:
    """The corpus, written the same way to any store; returns message id → position in CORPUS."""
    order: dict[int, int] = {}
    n = 0
    for i, (sid, turns) in enumerate(CORPUS.items()):
        await store.create_session(sid, source="cli", started_at=T0 + 100 * i, user_id=f"u{i % 2}")
        ids = await store.append_messages(
            sid, [msg(text, role=role, at=T0 + 100 * i + j) for j, (role, text) in enumerate(turns)]
        )
        for mid in ids:
            order[mid] = n
            n += 1
    return order


async def hits_by_position(
    store: SessionStore, order: dict[int, int], query: str, **kw: object
) -> dict[int, frozenset[str]]:
    result = await store.search(query, **kw)  # type: ignore[arg-type]  # keyword arguments of search
    return {order[h.message_id]: h.terms for h in result.hits}


@pytest.mark.parametrize("match", ["all", "any"])
async def test_both_backends_find_the_same_messages_for_the_same_queries(
    both: Pair, match: MatchMode
) -> None:
    lite, pg = await fill(both.sqlite), await fill(both.pg)
    for query in QUERIES:
        for roles in (("user", "assistant"), None):
            expected = await hits_by_position(both.sqlite, lite, query, match=match, roles=roles)
            got = await hits_by_position(both.pg, pg, query, match=match, roles=roles)
            assert got == expected, (query, match, roles)
    # The route each query takes is the same, and so are its terms.
    for query in QUERIES:
        a, b = await both.sqlite.search(query, match=match), await both.pg.search(query, match=match)
        assert (a.route, a.terms) == (b.route, b.terms), query


@pytest.mark.parametrize("route", ["trigram", "like"])
async def test_both_backends_agree_on_the_substring_routes(both: Pair, route: SearchRoute) -> None:
    lite, pg = await fill(both.sqlite), await fill(both.pg)
    for query in ["epl", "ppel", "灯台守", "東京", "tomato stake", "ROOF OR fence", "deploy"]:
        for match in ("all", "any"):
            expected = await hits_by_position(both.sqlite, lite, query, route=route, match=match)
            got = await hits_by_position(both.pg, pg, query, route=route, match=match)
            assert got == expected, (query, route, match)


async def test_both_backends_rank_the_same_sessions_for_session_search(both: Pair) -> None:
    await fill(both.sqlite)
    await fill(both.pg)
    for query in ["zeppelin trip", "deploy timeout staging", "tomato paint", "灯台守"]:
        found = []
        for store in both:
            tool = SessionSearchTool(store, current_session_id=lambda: None)
            found.append({r.ranked.session_id for r in await tool.discover(query, limit=10)})
        assert found[0] == found[1], query


async def test_anchored_views_are_identical(both: Pair) -> None:
    for store in both:
        await store.create_session("s", source="cli", started_at=T0)
        turns = [msg(f"turn {i}", role="user" if i % 2 == 0 else "assistant", at=T0 + i) for i in range(30)]
        turns[12] = msg("", role="assistant", at=T0 + 12)  # invisible: empty
        turns[3] = msg("summary", role="assistant", at=T0 + 3, summary=True)
        await store.append_messages("s", turns)
    for message_id in (1, 4, 15, 30):
        for window, bookend in ((5, 3), (2, 0), (20, 3)):
            a = await both.sqlite.anchored_view(message_id, window=window, bookend=bookend)
            b = await both.pg.anchored_view(message_id, window=window, bookend=bookend)
            assert a == b, (message_id, window, bookend)
    assert await both.pg.anchored_views([999, 1]) == await both.sqlite.anchored_views([999, 1])


HOSTILE = [
    "",
    "   ",
    '"',
    '""',
    '"unbalanced phrase',
    "AND",
    "OR NOT",
    "NOT zeppelin",
    "zeppelin AND",
    "a -b --c",
    "*",
    "zep*",
    "*zep",
    "NEAR(a b)",
    "col:value",
    "^start",
    "'; DROP TABLE messages; --",
    "%_%",
    "\\",
    "\x00\x01\x1f",
    "\ud800 lone surrogate",
    "(((((",
    "a & b | !c <-> d",
    "🙂🙂🙂",
    "x" * 5000,
    " ".join(["word"] * 300),
    "%s %(name)s {}",
]


@pytest.mark.parametrize("route", [None, "fts", "trigram", "like"])
async def test_hostile_queries_never_raise(store: SessionStore, route: SearchRoute | None) -> None:
    await fill(store)
    matches: tuple[MatchMode, ...] = ("all", "any")
    for query in HOSTILE:
        for match in matches:
            result = await store.search(query, match=match, route=route, user_ids=["u0", "u1"])
            assert all(h.message_id > 0 for h in result.hits)
    # ...and the store still works afterwards.
    assert len(await store.list_sessions()) == len(CORPUS)


async def test_a_cancelled_append_lands_whole_or_not_at_all(store: SessionStore) -> None:
    await store.create_session("s", source="cli", started_at=T0)
    batch = [msg(f"line {i}", at=T0 + i) for i in range(300)]
    for delay in (0.0, 0.001, 0.005, 0.02):
        with anyio.move_on_after(delay):
            await store.append_messages("s", batch)
        count = len(await store.get_messages("s"))
        assert count % len(batch) == 0  # whole batches only, whenever the cancel came
    await store.append_message("s", msg("after", at=T0 + 1000))
    records = await store.get_messages("s")
    assert [r.seq for r in records] == list(range(len(records)))
    session = await store.get_session("s")
    assert session is not None and session.message_count == len(records)
