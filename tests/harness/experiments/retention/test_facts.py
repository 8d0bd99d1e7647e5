"""The facts matcher (the local-flush rule) on hand-made cases, and reading a facts file."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.experiments.retention.facts import (
    MustNot,
    PlantedFact,
    chat_lines,
    fact_in,
    fact_in_text,
    has_term,
    load_facts,
    units,
    wrong_memory,
)

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
    held3 = load_facts(root / "facts_heldout3.yaml")
    assert sum(len(c.facts) for c in held) == 46 and len(held) == 12
    assert sum(len(c.facts) for c in held2) == 48 and len(held2) == 12
    assert sum(len(c.facts) for c in held3) == 24 and len(held3) == 8
    assert len(own) == 14
    # every file has traps: things a memory of it must not say
    for convs in (own, held, held2, held3):
        assert sum(len(c.must_not) for c in convs) >= 8


FACT_FILES = [
    "local_flush_conversations.yaml",
    "facts_heldout.yaml",
    "facts_heldout2.yaml",
    "facts_heldout3.yaml",
]


@pytest.mark.parametrize("name", FACT_FILES)
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


@pytest.mark.parametrize("name", FACT_FILES)
def test_every_trap_is_said_in_its_conversation_so_a_memory_could_fall_into_it(name: str) -> None:
    root = Path(__file__).resolve().parents[4] / "benchmarks"
    for conv in load_facts(root / name):
        said = "\n".join(text for _, text in conv.messages)
        for rule in conv.must_not:
            assert any(all(has_term(said, t) for t in alt) for alt in rule.match), f"{conv.id}/{rule.id}"
            # and the conversation's own planted facts never trip it
            planted = [" ".join(alt) for f in conv.facts for alt in f.match]
            assert not [p for p in planted if wrong_memory(p, [rule], ())], f"{conv.id}/{rule.id}"


GRAVITY = MustNot("gravity", (("9.81",),), ("never", "not", "n't"))
ORM = MustNot("orm", (("orm",),))


def test_a_wrong_memory_has_every_term_of_an_alternative_as_whole_words_and_no_unless_text() -> None:
    assert wrong_memory("Exam board uses 9.81", [GRAVITY], ()) == "gravity"
    assert wrong_memory("Uses g = 9.8, never 9.81 (exam board)", [GRAVITY], ()) is None
    assert wrong_memory("Doesn't use 9.81", [GRAVITY], ()) is None  # `n't` as a plain substring
    assert wrong_memory("Uses g = 9.8", [GRAVITY], ()) is None
    assert wrong_memory("Prefers an ORM for queries", [ORM], ()) == "orm"
    assert wrong_memory("Infrastructure changes only through Terraform", [ORM], ()) is None


def test_an_entry_copying_a_chat_line_with_its_speaker_is_a_wrong_memory() -> None:
    lines = chat_lines(
        [
            ("assistant", "Caroline: The support group has made me feel accepted and given me courage."),
            ("user", "Hi! I'm Sam O'Neill. I maintain a small Rust web service called quill."),
            ("user", "ok thanks"),
        ]
    )
    assert "ok thanks" not in " ".join(lines)  # too short to tell a copy by
    copied = "Caroline: The support group has made me feel accepted and given me courage to embrace"
    assert wrong_memory(copied, [], lines) == "copied line"
    assert wrong_memory(
        "User: Hi! I'm Sam O'Neill. I maintain a small Rust web service called quill.", [], lines
    )
    assert wrong_memory("Sam O'Neill maintains a small Rust web service called quill.", [], lines) is None
    assert wrong_memory("Caroline finds her support group accepting.", [], lines) is None


def test_terms_in_scripts_without_spaces_match_inside_a_sentence() -> None:
    assert has_term("我平时用Figma做设计", "figma")
    assert has_term("用户叫王丽，是设计师", "王丽")
    assert has_term("Меня зовут Андрей", "андрей")
    assert not has_term("Андрейка", "андрей")
