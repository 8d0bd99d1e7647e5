"""The retention eval's scorers on hand-made cases: LoCoMo's F1 rules and answer retained."""

from __future__ import annotations

import pytest

from harness.experiments.retention.scores import (
    answer_f1,
    answer_tokens,
    normalize_answer,
    retained,
    token_f1,
)


def test_normalization_drops_commas_punctuation_case_and_the_articles_locomo_drops() -> None:
    assert normalize_answer("The cat, and a dog!") == "cat dog"
    assert normalize_answer("An  apple-pie; THE end.") == "applepie end"


def test_tokens_are_porter_stemmed() -> None:
    assert answer_tokens("researching adoption agencies") == ["research", "adopt", "agenc"]
    assert token_f1("she runs", "running") == pytest.approx(2 * 0.5 * 1 / 1.5)


@pytest.mark.parametrize(
    ("prediction", "gold", "category", "expected"),
    [
        ("7 May 2023", "7 May 2023", 2, 1.0),
        ("May 7", "7 May 2023", 2, 0.8),  # precision 1, recall 2/3
        ("Paris", "7 May 2023", 4, 0.0),
        ("painting, swimming", "swimming, running, painting", 1, 2 / 3),  # best part per gold part
        ("swimming and painting", "swimming, painting", 1, pytest.approx(2 / 3)),
        ("psychology", "Psychology; counseling certification", 3, 1.0),  # only the part before ';'
    ],
)
def test_answer_f1_follows_locomo_rules_per_category(
    prediction: str, gold: str, category: int, expected: float
) -> None:
    assert answer_f1(prediction, gold, category) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("Not mentioned in the conversation", 1.0),
        ("(a) not mentioned", 1.0),
        ("No information available.", 1.0),
        ("self-care is important", 0.0),
        ("It was mentioned: self-care", 0.0),
    ],
)
def test_adversarial_answers_score_by_the_not_mentioned_rule(prediction: str, expected: float) -> None:
    assert answer_f1(prediction, "", 5) == expected


def test_an_answer_only_in_memory_survived_in_memory() -> None:
    r = retained(
        "sourdough bread",
        {"memory": "User bakes sourdough bread", "summary": "They chatted.", "tail": "Bye!"},
    )
    assert r.recall == 1.0
    assert r.where == ("memory",)


def test_an_answer_only_in_the_summary_survived_in_the_summary() -> None:
    r = retained("7 May 2023", {"memory": "", "summary": "On 7 May, 2023 she went to a group.", "tail": "ok"})
    assert r.recall == 1.0
    assert r.where == ("summary",)
    assert r.by_source["memory"] == 0.0


def test_a_lost_answer_has_no_recall_and_survived_nowhere() -> None:
    r = retained("sourdough bread", {"memory": "User likes tea", "summary": "They chatted.", "tail": "Bye!"})
    assert r.recall == 0.0
    assert r.where == ()


def test_a_partly_kept_answer_names_its_best_source_and_counts_tokens_across_sources() -> None:
    r = retained(
        "counseling certification",
        {"memory": "wants a certification", "summary": "talked about counseling", "tail": ""},
    )
    assert r.recall == 1.0  # each token is somewhere
    assert r.by_source["memory"] == 0.5
    assert r.where in (("memory",), ("summary",))
