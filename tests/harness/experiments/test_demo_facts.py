"""The demo's fact report: which durable facts a text holds, and which the flush saved."""

from __future__ import annotations

from harness.events import FlushEntry
from harness.experiments.demo import DEMO_FACTS, facts_in, facts_in_text


def test_facts_in_text_finds_each_fact_by_any_of_its_words_ignoring_case() -> None:
    memory = "§ Sam prefers short, direct answers\n§ quill uses Postgres 16"
    assert facts_in_text(memory) == ("name", "database", "short answers")
    assert facts_in_text("") == ()
    assert set(facts_in_text(" ".join(w for words in DEMO_FACTS.values() for w in words))) == set(DEMO_FACTS)


def test_facts_in_counts_only_saved_entries() -> None:
    entries = (
        FlushEntry("user", "add", "The user uses vim", saved=True),
        FlushEntry("user", "add", "Deploys on Fridays", saved=False, reason="refused"),
    )
    assert facts_in(entries) == ("editor",)
