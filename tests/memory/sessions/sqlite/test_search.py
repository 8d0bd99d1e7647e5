"""Message-level search: routes, the BM25 row budget, and robustness on every route."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import LockRetryPolicy, StoredMessage
from memory._sqlite import SqliteConnection
from memory.sessions import IndexFeatures, MatchMode, SearchRoute
from memory.sessions._ranking import RANK_BUDGET, choose_route
from memory.sessions.reads import SearchMessages
from memory.sessions.sqlite._schema import index_new_messages
from memory.sessions.sqlite._search import search_messages, term_doc_counts
from memory.sessions.sqlite._sql import append_messages, create_session
from memory.sessions.sqlite.store import _open_connection
from memory.sessions.writes import CreateSession

ALL = IndexFeatures(fts=True, trigram=True)


def open_sync(path: Path) -> SqliteConnection:
    # The blocking half of SessionDB.open: these tests drive the synchronous layer directly.
    conn, _ = _open_connection(path, fts=None, trigram=None, retry=LockRetryPolicy())
    return conn


def fill(conn: SqliteConnection, session_id: str, texts: list[str]) -> list[int]:
    def write(c: sqlite3.Connection) -> list[int]:
        create_session(c, CreateSession(session_id=session_id, source="cli", started_at=0.0))
        messages = [StoredMessage(role="user", content=t, timestamp=float(i)) for i, t in enumerate(texts)]
        ids = append_messages(c, session_id, messages)
        index_new_messages(c, ALL)  # as the store's group commit does at the end of each transaction
        return ids

    return conn.write(write)


def search(
    conn: SqliteConnection,
    query: str,
    *,
    match: MatchMode = "any",
    route: SearchRoute | None = None,
    limit: int = 50,
) -> list[int]:
    asked = SearchMessages(query=query, match=match, route=route, roles=None, limit=limit)
    result = conn.read(lambda c: search_messages(c, asked, features=ALL))
    return [h.message_id for h in result.hits]


@pytest.fixture
def big(tmp_path: Path) -> Iterator[tuple[SqliteConnection, list[int]]]:
    """Three times the row budget of a common word, plus a few rare ones, oldest first."""
    conn = open_sync(tmp_path / "state.db")
    texts = [f"common chatter line {i}" for i in range(3 * RANK_BUDGET)]
    texts[10] = "common chatter about the zeppelin"
    texts[20] = "an old note about the zeppelin"
    ids = fill(conn, "s1", texts)
    yield conn, ids
    conn.close()


def test_routes_follow_the_query_and_the_available_indexes() -> None:
    assert choose_route("deploy script", ALL) == "fts"
    assert choose_route("中文搜索", ALL) == "trigram"
    assert choose_route("中文", ALL) == "like"  # too short for a trigram
    assert choose_route("中文搜索", IndexFeatures(fts=True, trigram=False)) == "like"
    assert choose_route("deploy", IndexFeatures(fts=False, trigram=False)) == "like"


def test_document_counts_see_terms_as_the_index_does(big: tuple[SqliteConnection, list[int]]) -> None:
    conn, _ = big
    counts = conn.read(lambda c: term_doc_counts(c, ["zeppelins", "common", "chatter line", "absent"]))
    # "zeppelins" stems to "zeppelin"; a phrase counts as its rarest token.
    assert counts == [2, 3 * RANK_BUDGET - 1, 3 * RANK_BUDGET - 2, 0]


def test_rare_terms_are_ranked_even_when_a_common_term_matches_everything(
    big: tuple[SqliteConnection, list[int]],
) -> None:
    conn, ids = big
    hits = search(conn, "common zeppelin")
    # Both zeppelin rows come first although thousands of rows match "common".
    assert set(hits[:2]) == {ids[10], ids[20]}
    assert hits[0] == ids[10]  # it holds both terms


def test_a_query_of_only_common_terms_scores_its_newest_matches(
    big: tuple[SqliteConnection, list[int]],
) -> None:
    conn, ids = big
    hits = search(conn, "common chatter", limit=RANK_BUDGET)
    assert sorted(hits) == ids[-RANK_BUDGET:]  # exactly the newest budget's worth was scored
    assert search(conn, "common AND chatter", match="all", limit=5)


def test_terms_the_index_has_never_seen_are_dropped_from_the_or(
    big: tuple[SqliteConnection, list[int]],
) -> None:
    conn, ids = big
    assert set(search(conn, "qwxyzzy zeppelin")) == {ids[10], ids[20]}
    assert search(conn, "qwxyzzy") == []


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteConnection]:
    conn = open_sync(tmp_path_factory.mktemp("idx") / "state.db")
    fill(conn, "s1", ["the chat-send script broke", "我喜欢中文搜索引擎", "P2.2 of my_app", "100% sure"])
    yield conn
    conn.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    raw=st.lists(
        st.one_of(
            st.sampled_from(['"', "*", "NOT", "OR", "(", "-", ".", "%", "_", "中文搜索", " "]),
            st.text(max_size=5),
        ),
        max_size=30,
    ).map("".join),
    route=st.sampled_from(["fts", "trigram", "like", None]),
    match=st.sampled_from(["all", "any"]),
)
def test_no_query_makes_any_route_raise(
    small: SqliteConnection, raw: str, route: SearchRoute | None, match: MatchMode
) -> None:
    search(small, raw, route=route, match=match)
