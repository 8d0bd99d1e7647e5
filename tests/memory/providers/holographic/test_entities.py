"""Entity extraction: quotes, aliases, capitalized phrases and the generic-word rule."""

from __future__ import annotations

import pytest

from memory.providers.holographic import ExtractedEntity, extract_entities


def names(text: str) -> list[str]:
    return [e.name for e in extract_entities(text)]


def test_multi_word_capitalized_phrases_are_entities() -> None:
    assert names("We met Alice Smith at Acme Corp yesterday.") == ["Alice Smith", "Acme Corp"]


def test_single_capitalized_words_are_not() -> None:
    assert names("Caroline went to Paris with Melanie.") == []


def test_quoted_strings_are_entities_first() -> None:
    assert names('She calls the playlist "night drive" and the car “Blue Comet”.') == [
        "night drive",
        "Blue Comet",
    ]


def test_aka_gives_an_alias_not_a_second_entity() -> None:
    assert extract_entities("Robert Jones aka Bobby Jones leads QA.") == [
        ExtractedEntity(name="Robert Jones", aliases=("Bobby Jones",))
    ]
    assert extract_entities("Project Atlas, also known as Big Rewrite, slipped.") == [
        ExtractedEntity(name="Project Atlas", aliases=("Big Rewrite",))
    ]


@pytest.mark.parametrize(
    "text", ["Project Status: blocked on review.", "Next Steps. Then lunch.", "No Way Back here."]
)
def test_generic_headings_and_negations_are_not_entities(text: str) -> None:
    assert names(text) == []


def test_a_generic_word_inside_a_sentence_is_kept() -> None:
    # Only at a sentence start is "Project Status" a heading; mid-sentence it is a name.
    assert names("The dashboard is called Project Status.") == ["Project Status"]


def test_sentence_initial_generic_words_are_trimmed_from_a_name() -> None:
    assert names("Yesterday Alice Smith's dog ran away.") == ["Alice Smith"]


def test_possessives_are_stripped_and_duplicates_merged_case_insensitively() -> None:
    assert names("Golden Gate Bridge's towers; the golden gate bridge again; GOLDEN Gate Bridge.") == [
        "Golden Gate Bridge"
    ]


def test_names_are_nfkc_normalized_and_bounded() -> None:
    assert names("Ｆｕｌｌ Ｗｉｄｔｈ is a font.") == ["Full Width"]
    long_run = " ".join(f"Word{i}" for i in range(12))
    assert names(f"see {long_run} here") == []
