"""Hybrid session search on both backends: the background index, search by meaning, routing, fusion.

Runs the real embedder (the semantic extra, installed by `.[dev]`) on a real SQLite file and
a real PostgreSQL schema.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import numpy as np
import pytest

from memory.providers.semantic import MiniLmEmbedder
from memory.sessions import (
    DenseIndex,
    SessionSearchTool,
    SessionStore,
    StoredMessage,
    open_vectors,
    route_query,
)
from memory.sessions.dense import CodeIndex, sign_codes

T0 = 1_700_000_000.0
EMBEDDER = MiniLmEmbedder()


async def _history(store: SessionStore) -> None:
    await store.create_session("pets", source="cli", started_at=T0, user_id="ann")
    await store.append_messages(
        "pets",
        [
            StoredMessage(
                role="user", content="We adopted a golden retriever puppy on Saturday", timestamp=T0 + 1
            ),
            StoredMessage(
                role="assistant", content="Congratulations! What did you name him?", timestamp=T0 + 2
            ),
            StoredMessage(
                role="tool", content="a tool output about puppies", timestamp=T0 + 3, tool_call_id="c1"
            ),
        ],
    )
    await store.create_session("deploy", source="cli", started_at=T0 + 10, user_id="ann")
    await store.append_messages(
        "deploy",
        [
            StoredMessage(role="user", content="scripts/deploy_v2.sh fails on staging", timestamp=T0 + 11),
            StoredMessage(
                role="assistant", content="The release script needs the new token.", timestamp=T0 + 12
            ),
        ],
    )


@pytest.fixture
async def index(store: SessionStore) -> AsyncIterator[DenseIndex]:
    vectors = open_vectors(store)
    assert vectors is not None
    dense = DenseIndex(vectors, EMBEDDER, batch=2)
    yield dense
    await dense.aclose()


async def test_the_indexer_embeds_the_conversation_once_and_resumes_with_new_messages(
    store: SessionStore, index: DenseIndex
) -> None:
    await _history(store)
    seen: list[tuple[int, int]] = []
    assert await index.catch_up(progress=lambda done, total: seen.append((done, total))) == 4
    assert seen[-1] == (4, 4)  # batches of 2: progress after each
    assert len(seen) == 2
    status = await index.status()
    assert (status.embedded, status.total) == (4, 4)  # the tool message is not embedded
    assert await index.catch_up() == 0
    await store.append_message("deploy", StoredMessage(role="user", content="fixed it", timestamp=T0 + 13))
    assert await index.catch_up() == 1


async def test_a_fresh_index_on_an_existing_store_fills_in_what_another_left(
    store: SessionStore, index: DenseIndex
) -> None:
    await _history(store)
    assert await index.catch_up(limit=3) == 3
    vectors = open_vectors(store)
    assert vectors is not None
    later = DenseIndex(vectors, EMBEDDER)
    try:
        assert await later.catch_up() == 1  # only the one the first run did not reach
        assert (await later.status()).embedded == 4
    finally:
        await later.aclose()


async def test_vectors_of_another_model_are_dropped_not_compared(
    store: SessionStore, index: DenseIndex
) -> None:
    await _history(store)
    await index.catch_up()
    vectors = open_vectors(store)
    assert vectors is not None
    await vectors.prepare("some-other-model")
    try:
        assert await vectors.counts() == (0, 4)
    finally:
        await vectors.aclose()


async def test_meaning_finds_what_no_word_of_the_query_matches(
    store: SessionStore, index: DenseIndex
) -> None:
    await _history(store)
    await index.catch_up()
    words = SessionSearchTool(store, current_session_id=lambda: None)
    hybrid = SessionSearchTool(store, current_session_id=lambda: None, dense=index)
    query = "which dog breed did we get"
    assert route_query(query).route == "hybrid"
    assert [r.ranked.session_id for r in await words.discover(query)] == []
    found = await hybrid.discover(query)
    assert [r.ranked.session_id for r in found][:1] == ["pets"]
    assert found[0].ranked.dense_rank == 1
    assert found[0].ranked.lexical_rank is None


async def test_a_query_about_nothing_stored_still_finds_nothing(
    store: SessionStore, index: DenseIndex
) -> None:
    await _history(store)
    await index.catch_up()
    hybrid = SessionSearchTool(store, current_session_id=lambda: None, dense=index)
    reply = json.loads(await hybrid.handle({"query": "quantum chromodynamics lattice"}))
    assert reply["count"] == 0


async def test_dense_results_stay_inside_the_callers_users(store: SessionStore, index: DenseIndex) -> None:
    await _history(store)
    await store.create_session("bob-pets", source="cli", started_at=T0 + 20, user_id="bob")
    await store.append_message(
        "bob-pets", StoredMessage(role="user", content="my new labrador puppy chews shoes", timestamp=T0 + 21)
    )
    await index.catch_up()
    ann = SessionSearchTool(store, current_session_id=lambda: None, dense=index, user_ids=["ann"])
    found = [r.ranked.session_id for r in await ann.discover("which dog breed did we get", limit=5)]
    assert "bob-pets" not in found
    assert found[:1] == ["pets"]
    bob = SessionSearchTool(store, current_session_id=lambda: None, dense=index, user_ids=["bob"])
    assert [r.ranked.session_id for r in await bob.discover("which dog breed did we get", limit=5)] == [
        "bob-pets"
    ]


async def test_a_recovery_pointer_identifier_finds_the_compressed_rows_with_dense_on(
    store: SessionStore, index: DenseIndex
) -> None:
    await _history(store)
    await store.end_session("deploy", reason="compression", ended_at=T0 + 14)
    await store.create_session("deploy-2", source="cli", started_at=T0 + 15, parent_session_id="deploy")
    await store.append_message("deploy-2", StoredMessage(role="user", content="continue", timestamp=T0 + 16))
    await index.catch_up()
    tool = SessionSearchTool(store, current_session_id=lambda: "deploy-2", dense=index)
    routing = route_query("deploy_v2.sh")
    assert routing.route == "lexical"
    assert routing.dense_weight == 0
    found = await tool.discover("deploy_v2.sh")
    assert [r.ranked.session_id for r in found] == ["deploy"]  # the compressed parent, by its words
    assert found[0].view.anchor.message.content.startswith("scripts/deploy_v2.sh")


@pytest.mark.parametrize(
    ("query", "route"),
    [
        ('what did "the blue notebook" say', "lexical"),
        ("what happened on 2023-05-07", "lexical"),
        ("the meeting of 7 May", "lexical"),
        ("errors in ~/src/keel/harness/cli.py", "lexical"),
        ("where is SessionSearchTool defined", "lexical"),
        ("what did session_search return", "lexical"),
        ("commit 9f8e7d6c broke it", "lexical"),
        ("When did Caroline go to the support group?", "temporal"),
        ("how long ago was the trip", "temporal"),
        ("What does Melanie do to relax?", "hybrid"),
        ("Caroline's favourite books", "hybrid"),
    ],
)
def test_queries_are_routed_by_what_they_name(query: str, route: str) -> None:
    assert route_query(query).route == route


def test_the_sign_code_prefilter_keeps_the_true_nearest_neighbours() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(5000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes = CodeIndex()
    ids = list(range(1, 5001))
    codes.add(ids, ids, sign_codes(vectors))
    query = vectors[42] + 0.05 * rng.normal(size=384).astype(np.float32)
    best = int(np.argmax(vectors @ query)) + 1
    picked = codes.nearest(sign_codes(query[None, :])[0], 200)
    assert len(picked) == 200
    assert best in picked
    assert sorted(codes.nearest(sign_codes(query[None, :])[0], 10_000)) == ids  # fewer than asked: all
