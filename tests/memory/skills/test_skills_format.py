"""SKILL.md parsing and the naming and size rules (memory/skills/_format.py)."""

from __future__ import annotations

import pytest

from memory.skills import MAX_TEXT_CHARS, SkillInputError, check_name, parse_skill_md
from memory.skills._format import category_description, encode_text


def test_a_valid_skill_md_parses_into_name_description_and_body() -> None:
    doc = parse_skill_md("---\nname: git-bisect\ndescription: Find a bad commit.\nversion: 2\n---\n# Steps\n")
    assert (doc.name, doc.description, doc.body) == ("git-bisect", "Find a bad commit.", "# Steps\n")


def test_a_leading_bom_and_crlf_line_endings_are_tolerated() -> None:
    doc = parse_skill_md("\ufeff---\r\nname: x\r\ndescription: Y\r\n---\r\nbody\r\n", expected_name="x")
    assert doc.name == "x"
    assert doc.description == "Y"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: x\n---\nbody", "must start with a '---' line"),
        ("---\nname: x\ndescription: y\nbody", "not closed"),
        ("---\n- a\n- b\n---\nbody", "YAML mapping"),
        ("---\ndescription: y\n---\nbody", "string 'name'"),
        ("---\nname: 12\ndescription: y\n---\nbody", "string 'name'"),
        ("---\nname: x\n---\nbody", "'description'"),
        ("---\nname: x\ndescription: '   '\n---\nbody", "'description'"),
        ("---\nname: x\ndescription: y\n---\n  \n\n", "empty body"),
        ("---\nname: x\ndescription: [unclosed\n---\nbody", "not valid YAML"),
        ("---\nname: x\ndescription: y\nwhen: 2023-13-45\n---\nbody", "not valid YAML"),
    ],
)
def test_malformed_front_matter_is_refused_with_a_message_naming_the_fix(text: str, fragment: str) -> None:
    with pytest.raises(SkillInputError, match=fragment):
        parse_skill_md(text)


def test_the_description_may_be_1024_characters_but_not_1025() -> None:
    parse_skill_md(f"---\nname: x\ndescription: {'d' * 1024}\n---\nbody")
    with pytest.raises(SkillInputError, match="1,025 characters; the limit is 1,024"):
        parse_skill_md(f"---\nname: x\ndescription: {'d' * 1025}\n---\nbody")


def test_the_front_matter_name_must_equal_the_directory_name() -> None:
    with pytest.raises(SkillInputError, match="set 'name: deploy'"):
        parse_skill_md("---\nname: other\ndescription: y\n---\nbody", expected_name="deploy")


@pytest.mark.parametrize("name", ["a", "git-bisect", "v1.2_tool", "0day", "x" * 64])
def test_valid_names_pass(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "Deploy", "-x", ".hidden", "_x", "a/b", "a b", "..", "x" * 65, "é"])
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(SkillInputError, match="skill name"):
        check_name(name)


def test_text_over_100000_characters_is_refused_and_at_the_limit_is_accepted() -> None:
    assert len(encode_text("a" * MAX_TEXT_CHARS, what="x")) == MAX_TEXT_CHARS
    with pytest.raises(SkillInputError, match="100,001 characters; the limit is 100,000"):
        encode_text("a" * (MAX_TEXT_CHARS + 1), what="x")


def test_text_with_an_unpaired_surrogate_is_refused_rather_than_crashing_on_encode() -> None:
    with pytest.raises(SkillInputError, match="not valid UTF-8"):
        encode_text("ok \ud800", what="x")


def test_category_description_reads_front_matter_else_the_first_text_line() -> None:
    assert category_description("---\ndescription: Ops  work\n---\n") == "Ops work"
    assert category_description("# Ops\n\nDeploys and\n") == "Deploys and"
    assert category_description("# only a heading\n") is None
