"""Retrieval on both fact stores (SQLite, PostgreSQL): hybrid search with and without numpy,
trust floor, entity queries, tokenizing."""

from __future__ import annotations

import pytest

from memory.providers._text import cjk_like_terms, fts_terms, jaccard_tokens, words
from memory.providers.holographic import (
    FTS_ONLY_WEIGHTS,
    LEXICAL_WEIGHTS,
    FactBackend,
    RetrievalWeights,
    Retriever,
)
from tests.memory.providers.holographic.conftest import FactStores

FACTS = [
    ("Alice Smith works at Acme Corp as a data engineer.", "general"),
    ("The user prefers dark mode in every editor.", "user_pref"),
    ("Project Atlas stores its data in Postgres 16.", "project"),
    ("Robert Jones manages Alice Smith at Acme Corp.", "general"),
    ("Alice Smith moved to Berlin in 2021.", "general"),
    ("The deploy script lives in tools/deploy.sh.", "tool"),
    ("Melanie paints sunrises over the lake on weekends.", "general"),
]


def filled(facts: FactStores, key: str, *, use_numpy: bool) -> FactBackend:
    store = facts.open(key, use_numpy=use_numpy)
    for content, category in FACTS:
        store.add_fact(content, category=category)  # type: ignore[arg-type]  # literals from the table
    return store


@pytest.fixture(params=[True, False], ids=["numpy", "no-numpy"])
def store(request: pytest.FixtureRequest, facts: FactStores) -> FactBackend:
    return filled(facts, "memory_store", use_numpy=bool(request.param))


def top(retriever: Retriever, query: str, **kwargs: object) -> str:
    hits = retriever.search(query, **kwargs)  # type: ignore[arg-type]  # test helper passthrough
    assert hits, f"no results for {query!r}"
    return hits[0].fact.content


def test_search_puts_the_relevant_fact_first(store: FactBackend) -> None:
    retriever = Retriever(store)
    assert top(retriever, "which database does Atlas use?") == "Project Atlas stores its data in Postgres 16."
    assert (
        top(retriever, "what editor theme does the user like")
        == "The user prefers dark mode in every editor."
    )
    assert top(retriever, "where is the deploy script") == "The deploy script lives in tools/deploy.sh."
    assert top(retriever, "who paints at the lake") == "Melanie paints sunrises over the lake on weekends."
    assert "Alice Smith" in top(retriever, "Where does Alice work?")


def test_without_numpy_the_weights_fall_back_to_lexical(facts: FactStores) -> None:
    plain = filled(facts, "plain", use_numpy=False)
    vectors = filled(facts, "vectors", use_numpy=True)
    assert Retriever(plain).weights == LEXICAL_WEIGHTS
    assert not Retriever(plain).uses_hrr
    assert Retriever(vectors).weights == RetrievalWeights(fts=0.35, jaccard=0.25, hrr=0.4)
    assert Retriever(vectors).uses_hrr
    # The lexical ranking is the same whether numpy is off or merely weighted out.
    query = "Alice Smith at Acme"
    assert [h.fact.content for h in Retriever(plain).search(query)] == [
        h.fact.content for h in Retriever(vectors, weights=LEXICAL_WEIGHTS).search(query)
    ]


def test_stopword_only_queries_find_nothing(store: FactBackend) -> None:
    assert Retriever(store).search("what is it that they were?") == []


def test_facts_below_the_trust_floor_are_never_returned(store: FactBackend) -> None:
    retriever = Retriever(store)
    hit = retriever.search("deploy script")[0].fact
    store.update_fact(hit.fact_id, trust_delta=-0.25)  # 0.5 → 0.25 < 0.3
    assert all(h.fact.fact_id != hit.fact_id for h in retriever.search("deploy script"))
    assert retriever.search("deploy script", min_trust=0.2)[0].fact.fact_id == hit.fact_id


def test_trust_scales_the_score(store: FactBackend) -> None:
    retriever = Retriever(store, weights=FTS_ONLY_WEIGHTS)
    first, second = retriever.search("Alice Smith Acme", limit=2)
    store.update_fact(second.fact.fact_id, trust_delta=0.5)
    assert retriever.search("Alice Smith Acme", limit=1)[0].fact.fact_id == second.fact.fact_id
    assert first.fact.fact_id != second.fact.fact_id


def test_search_filters_by_category_and_counts_retrievals(store: FactBackend) -> None:
    retriever = Retriever(store)
    hits = retriever.search("data", category="project", count_retrieval=True)
    assert [h.fact.category for h in hits] == ["project"]
    assert store.get_fact(hits[0].fact.fact_id).retrieval_count == 1


def test_temporal_decay_halves_scores_per_half_life(facts: FactStores) -> None:
    now = [1_000_000.0]
    store = facts.open("f", use_numpy=False, now=lambda: now[0])
    store.add_fact("Old news about the garden.")
    fresh = Retriever(store, weights=FTS_ONLY_WEIGHTS, now=lambda: now[0]).search("garden")[0].score
    now[0] += 10 * 86_400
    decayed = Retriever(store, weights=FTS_ONLY_WEIGHTS, half_life_days=10, now=lambda: now[0])
    assert decayed.search("garden")[0].score == pytest.approx(fresh / 2)


def test_cjk_text_is_found_through_substring_terms(facts: FactStores) -> None:
    store = facts.open("f", use_numpy=True)
    store.add_fact("用户喜欢喝绿茶")
    store.add_fact("项目使用数据库")
    assert top(Retriever(store), "绿茶") == "用户喜欢喝绿茶"
    assert top(Retriever(store), "项目数据库") == "项目使用数据库"


def test_probe_finds_the_facts_naming_an_entity(store: FactBackend) -> None:
    hits = Retriever(store).probe("alice smith")
    assert {h.fact.content for h in hits} == {
        "Alice Smith works at Acme Corp as a data engineer.",
        "Robert Jones manages Alice Smith at Acme Corp.",
        "Alice Smith moved to Berlin in 2021.",
    }
    assert Retriever(store).probe("Nobody Atall") == []


def test_probe_fills_up_with_keyword_matches_for_single_word_names(store: FactBackend) -> None:
    # "Melanie" alone is not an extracted entity (one capitalized word), so only the
    # keyword fill can find it.
    assert [h.fact.content for h in Retriever(store).probe("Melanie")] == [
        "Melanie paints sunrises over the lake on weekends."
    ]


def test_reason_needs_every_entity(store: FactBackend) -> None:
    hits = Retriever(store).reason(["Alice Smith", "Robert Jones"])
    assert [h.fact.content for h in hits] == ["Robert Jones manages Alice Smith at Acme Corp."]
    assert Retriever(store).reason([" ", ""]) == []


def test_related_also_finds_mentions_in_content(store: FactBackend) -> None:
    hits = Retriever(store).related("postgres")
    assert [h.fact.content for h in hits] == ["Project Atlas stores its data in Postgres 16."]


def test_contradict_pairs_facts_about_the_same_entity_that_differ(facts: FactStores) -> None:
    for use_numpy in (True, False):
        store = facts.open(f"c{use_numpy}", use_numpy=use_numpy)
        a = store.add_fact("Dana Scully lives in Seattle.").fact_id
        b = store.add_fact("Dana Scully moved to rural Vermont years ago.").fact_id
        store.add_fact("Fox Mulder likes sunflower seeds.")
        found = Retriever(store).contradict()
        assert [{c.first.fact_id, c.second.fact_id} for c in found] == [{a, b}], use_numpy
        assert found[0].shared_entities == ("Dana Scully",)
        assert Retriever(store).contradict(threshold=0.99) == []


def test_weights_must_be_usable() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        RetrievalWeights(fts=-1.0)
    with pytest.raises(ValueError, match="not all 0"):
        RetrievalWeights(fts=0.0, jaccard=0.0, hrr=0.0)


def test_tokenizers() -> None:
    assert words("Hello, WORLD! (again)") == ["hello", "world", "again"]
    assert fts_terms("What did Caroline do at the LGBTQ+ support group?") == [
        "caroline",
        "lgbtq",
        "support",
        "group",
    ]
    assert fts_terms('"OR" NEAR AND') == ["near"]  # operators are just words once quoted
    assert jaccard_tokens("用户喜欢 tea") == {"用户", "户喜", "喜欢", "tea"}
    assert cjk_like_terms("项目数据库 and 茶") == ["项目数", "目数据", "数据库"]


def test_the_hybrid_score_is_40_hrr_35_fts_25_jaccard(facts: FactStores) -> None:
    store = filled(facts, "memory_store", use_numpy=True)
    retriever = Retriever(store)
    assert retriever.weights == RetrievalWeights(hrr=0.4, fts=0.35, jaccard=0.25)
    query = "where does Alice Smith work and live?"

    def scores(weights: RetrievalWeights) -> dict[int, float]:
        return {h.fact.fact_id: h.score for h in Retriever(store, weights=weights).search(query, limit=7)}

    fused = scores(retriever.weights)
    hrr = scores(RetrievalWeights(fts=0.0, jaccard=0.0, hrr=1.0))
    fts = scores(RetrievalWeights(fts=1.0, jaccard=0.0, hrr=0.0))
    overlap = scores(RetrievalWeights(fts=0.0, jaccard=1.0, hrr=0.0))
    assert len(fused) >= 3
    for fact_id, score in fused.items():
        expected = 0.4 * hrr[fact_id] + 0.35 * fts[fact_id] + 0.25 * overlap[fact_id]
        assert score == pytest.approx(expected, rel=1e-9)
    # the signals rank the facts differently, so the weights are what decides the order
    orders = {tuple(sorted(s, key=s.__getitem__, reverse=True)) for s in (hrr, fts, overlap)}
    assert len(orders) >= 2
