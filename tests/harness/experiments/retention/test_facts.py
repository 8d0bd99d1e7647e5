"""The facts matcher (the local-flush rule) on hand-made cases, and reading a facts file."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.experiments.retention.facts import PlantedFact, fact_in, fact_in_text, load_facts, units

DB = PlantedFact("database", (("postgresql", "16"), ("postgres", "16")))
LANG = PlantedFact("lang", (("c++",),))


def test_a_fact_matches_when_every_term_of_one_alternative_is_there_as_a_word() -> None:
    assert fact_in("The user runs Postgres 16 in production.", DB)
    assert not fact_in("The user runs Postgres 9.6 in production.", DB)  # one term missing
    assert not fact_in("The user runs PostgreSQL 160.", DB)  # 160 is not the word 16
    assert fact_in("Prefers C++ for the engine", LANG)
    assert not fact_in("Prefers C for the engine", LANG)


def test_a_unit_over_300_characters_never_matches() -> None:
    long = "PostgreSQL 16 " + "x" * 300
    assert not fact_in(long, DB)


def test_long_lines_are_cut_into_sentences_so_a_fact_in_one_sentence_still_counts() -> None:
    line = "word " * 70 + ". The database is PostgreSQL 16. " + "more " * 30
    assert len(line) > 300
    assert any("PostgreSQL 16" in u for u in units(line))
    assert fact_in_text(line, DB)


def test_terms_split_over_two_lines_do_not_make_a_fact() -> None:
    assert not fact_in_text("PostgreSQL is the database\nversion 16 of the app", DB)


def test_a_facts_file_reads_conversations_and_lowercases_terms(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(
        "conversations:\n  - id: a\n    messages:\n      - {role: user, content: I use Vim}\n"
        "    facts:\n      - {id: editor, match: [[Vim]]}\n",
        encoding="utf-8",
    )
    (conv,) = load_facts(path)
    assert conv.messages == (("user", "I use Vim"),)
    assert conv.facts == (PlantedFact("editor", (("vim",),)),)


def test_a_file_without_conversations_is_refused_with_the_format_named(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("facts: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="local_flush_conversations"):
        load_facts(path)


def test_the_shipped_facts_files_load() -> None:
    root = Path(__file__).resolve().parents[4] / "benchmarks"
    own = load_facts(root / "local_flush_conversations.yaml")
    held = load_facts(root / "facts_heldout.yaml")
    held2 = load_facts(root / "facts_heldout2.yaml")
    assert sum(len(c.facts) for c in held) == 46 and len(held) == 12
    assert sum(len(c.facts) for c in held2) == 48 and len(held2) == 12
    assert len(own) == 12


@pytest.mark.parametrize(
    "name", ["local_flush_conversations.yaml", "facts_heldout.yaml", "facts_heldout2.yaml"]
)
def test_every_shipped_fact_is_said_whole_in_one_message_of_its_conversation(name: str) -> None:
    # a term YAML turned into something else (an unquoted `no` reads as false) or a typo
    # would make a fact no entry can ever match
    root = Path(__file__).resolve().parents[4] / "benchmarks"
    for conv in load_facts(root / name):
        for fact in conv.facts:
            assert any(fact_in(text, fact) for _, text in conv.messages), f"{conv.id}/{fact.id}"


def test_a_long_list_of_identifiers_is_one_unit_and_too_long_to_hold_a_fact() -> None:
    index = "Identifiers: " + "; ".join(["Sam", "PostgreSQL", "16"] + [f"id-{n}" for n in range(60)])
    assert len(index) > 300
    assert not fact_in_text(index, DB)
    assert not fact_in_text(index, PlantedFact("name", (("sam",),)))
