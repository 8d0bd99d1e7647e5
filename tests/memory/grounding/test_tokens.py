"""Grounding counts Unicode words: a fact in Cyrillic, Chinese, Greek, Arabic or Devanagari is
judged by the same rule as one in Latin letters (issue 43, item 5)."""

from __future__ import annotations

import pytest

from memory.grounding import content_words, grounded, tokens


def test_numbers_versions_and_names_with_apostrophes_stay_whole() -> None:
    assert tokens("Use g = 9.8, never 9.81. I'm Sam O'Neill in eu-west-1.") == [
        "use", "g", "9.8", "never", "9.81", "i'm", "sam", "o'neill", "in", "eu-west-1",
    ]  # fmt: skip


def test_a_devanagari_vowel_sign_belongs_to_its_word() -> None:
    assert tokens("नमस्ते! मेरा नाम राहुल है") == ["नमस्ते", "मेरा", "नाम", "राहुल", "है"]


def test_chinese_counts_as_character_pairs_and_a_latin_name_inside_it_stays_a_word() -> None:
    assert tokens("我叫王丽") == ["我叫", "叫王", "王丽"]
    assert "figma" in tokens("我平时用Figma做设计")


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        (
            "Пользователя зовут Андрей, он переводит с немецкого",
            "Меня зовут Андрей. Я перевожу документацию с немецкого.",
        ),
        ("用户叫王丽，是杭州的平面设计师", "你好！我叫王丽，是杭州的一名平面设计师。"),
        ("Η Ελένη γράφει τις ασκήσεις σε LaTeX", "Είμαι η Ελένη. Γράφω τις ασκήσεις μου σε LaTeX."),
        ("ليلى صيدلانية في عمّان وتستخدم R", "مرحبا، اسمي ليلى وأعمل صيدلانية في عمّان. أستخدم لغة R"),
        ("राहुल पुणे में बैकएंड डेवलपर है", "नमस्ते! मेरा नाम राहुल है, मैं पुणे में बैकएंड डेवलपर हूँ।"),
    ],
)
def test_a_fact_in_another_script_is_grounded_in_what_was_said(fact: str, said: str) -> None:
    assert len(content_words(fact)) >= 2  # a fact, not "a bare word or name"
    assert grounded(fact, said)


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        ("Андрей работает врачом в Москве", "Меня зовут Андрей. Я перевожу документацию с немецкого."),
        ("王丽是上海的医生", "你好！我叫王丽，是杭州的一名平面设计师。"),
        ("राहुल 2019 से डेवलपर है", "मेरा नाम राहुल है, मैं पुणे में बैकएंड डेवलपर हूँ।"),
    ],
)
def test_an_invented_fact_in_another_script_is_not_grounded(fact: str, said: str) -> None:
    assert not grounded(fact, said)


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        ("Sam codes in Go", "I write everything in Go these days."),
        ("Sam's employer is Acme", "I work at Acme as a backend developer."),
        ("Deploys on Google Cloud", "We run it all on GCP."),
        ("Lives in Porto now", "I moved to Porto last month."),
    ],
)
def test_a_paraphrase_of_what_was_said_is_grounded(fact: str, said: str) -> None:
    assert grounded(fact, said)


def test_a_paraphrase_table_does_not_ground_a_new_detail() -> None:
    assert not grounded("Sam is a doctor in Lisbon", "I moved to Porto last month.")
    assert not grounded("Sam works at Initech", "I work at Acme as a backend developer.")


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        ("The user's name is Olga", "Привет! Меня зовут Ольга, я из Москвы."),
        ("Olga lives in Novosibirsk", "Меня зовут Ольга, живу в Новосибирске."),
        ("The user's name is Nikos", "Γεια σας! Είμαι ο Νίκος, προγραμματιστής."),
        ("The user's name is Amit", "नमस्ते! मेरा नाम अमित है।"),
        ("The user's name is Karim", "مرحبا، اسمي كريم."),
        ("Karim lives in Amman", "اسمي كريم وأعيش في عمّان."),
    ],
)
def test_a_name_said_in_another_script_and_written_in_latin_letters_is_grounded(fact: str, said: str) -> None:
    assert grounded(fact, said, labels=frozenset({"name"}))


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        ("The user's name is Boris", "Привет! Меня зовут Ольга, я из Москвы."),
        ("Olga is a nurse", "Привет! Меня зовут Ольга, я из Москвы."),  # her job was never said
        ("The user's name is Yusuf", "مرحبا، اسمي كريم."),
        ("The user's name is Wang Li", "你好！我叫张伟。"),  # no spelling of Chinese here
    ],
)
def test_a_latin_name_that_spells_nothing_said_is_not_grounded(fact: str, said: str) -> None:
    assert not grounded(fact, said, labels=frozenset({"name"}))
