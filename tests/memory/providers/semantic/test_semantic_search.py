"""Search by meaning with the real local embedder: the seeds' pytest case and the ranking rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memory import ProviderContext
from memory.providers import PgPlace
from memory.providers.semantic import MiniLmEmbedder, SemanticProvider, hubness
from memory.testing import WordHashEmbedder
from tests.memory.providers.semantic.conftest import needs_embedder

SEEDS = ["they prefer pytest over unittest", "deploys on Fridays", "uses dark mode"]


async def started(
    home: Path, embedder: object, *, pg: PgPlace | None = None, **kwargs: object
) -> SemanticProvider:
    provider = SemanticProvider(pg=pg, embedder=embedder, **kwargs)  # type: ignore[arg-type]  # test passthrough
    await provider.initialize(ProviderContext("s1", agent_context="primary", home=home, platform="cli"))
    return provider


@needs_embedder
async def test_what_does_the_user_use_for_testing_finds_the_pytest_fact_first(
    home: Path, pg: PgPlace | None, minilm: MiniLmEmbedder
) -> None:
    provider = await started(home, minilm, pg=pg)
    try:
        for fact in SEEDS:
            await provider.save(fact)
        reply = json.loads(
            await provider.handle_tool_call(
                "semantic_search", {"query": "what does the user use for testing?"}
            )
        )
        assert reply["results"][0]["content"] == "they prefer pytest over unittest"
        recalled = await provider.prefetch("what does the user use for testing?", session_id="s1")
        lines = recalled.splitlines()
        assert lines[0] == "## Semantic Memory"
        assert lines[1] == "- they prefer pytest over unittest"
        assert "deploys on Fridays" not in recalled  # unrelated: below the recall floor
    finally:
        await provider.shutdown()


@needs_embedder
def test_the_embedder_gives_unit_vectors_that_put_paraphrases_close(minilm: MiniLmEmbedder) -> None:
    vectors = minilm.embed(
        ["The user deploys on Fridays", "Every Friday the user ships to production", "tea"]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2
    assert minilm.embed([]).shape == (0, 384)


def test_hubness_is_the_mean_similarity_to_the_nearest_others() -> None:
    matrix = np.eye(4, dtype=np.float32)
    matrix[3] = np.array([0.6, 0.8, 0.0, 0.0], dtype=np.float32)
    hub = hubness(matrix, 2)
    # row 3 sits between rows 0 and 1: its two nearest are 0.8 and 0.6
    assert hub[3] == pytest.approx(0.7)
    assert hub[2] == pytest.approx(0.0)
    assert hubness(matrix[:1], 10).tolist() == [0.0]


async def test_a_word_shared_by_most_memories_does_not_decide_the_order(
    home: Path, pg: PgPlace | None
) -> None:
    # With the word-hash stand-in, "mode" alone would be a full-text match for all of them.
    provider = await started(home, WordHashEmbedder(), pg=pg)
    try:
        for fact in ("dark mode in the editor", "airplane mode on flights", "strict mode in typescript"):
            await provider.save(fact)
        await provider.save("the user deploys on fridays")
        reply = json.loads(
            await provider.handle_tool_call("semantic_search", {"query": "which mode for typescript"})
        )
        assert reply["results"][0]["content"] == "strict mode in typescript"
    finally:
        await provider.shutdown()


def test_hubness_kept_up_to_date_as_rows_are_added_equals_a_fresh_computation() -> None:
    from memory.providers.semantic.search import _HubIndex

    rng = np.random.default_rng(7)
    rows = rng.standard_normal((60, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    index = _HubIndex(5)
    for n in (3, 8, 20, 21, 40, 60):  # too few for k first, then appends of 1 to 20 rows
        matrix = rows[:n].copy()
        got = index.values(list(range(n)), matrix)
        assert np.allclose(got, hubness(matrix, 5), atol=1e-6)
    changed = rows[:60].copy()
    changed[10] = rows[59]  # an update in place: recomputed, still exact
    assert np.allclose(index.values(list(range(60)), changed), hubness(changed, 5), atol=1e-6)
