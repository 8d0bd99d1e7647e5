"""The curated-store text format and the pure write planner."""

from __future__ import annotations

import pytest

from memory.curated._entries import (
    ENTRY_DELIMITER,
    RULE,
    check_content,
    joined_length,
    locate,
    measure,
    parse_entries,
    render_block,
    round_trips,
    serialize_entries,
)
from memory.curated._ops import AddOp, RemoveOp, ReplaceOp, plan_write
from memory.errors import AmbiguousMatchError, InvalidWriteError, NoMatchError, StoreFullError


def test_the_delimiter_is_three_characters_and_counts_against_the_budget() -> None:
    assert len(ENTRY_DELIMITER) == 3
    assert joined_length(["aaa", "bbb"]) == 9
    assert joined_length([]) == 0


def test_parsing_splits_on_the_full_delimiter_only_so_a_lone_section_sign_survives() -> None:
    text = "Clause § 3 applies\n§\nsecond\n§b\nstill second"
    assert parse_entries(text) == ("Clause § 3 applies", "second\n§b\nstill second")
    assert parse_entries(serialize_entries(parse_entries(text))) == parse_entries(text)


def test_parsing_strips_pieces_and_drops_empty_ones() -> None:
    assert parse_entries("  a \n§\n\n§\n b\n") == ("a", "b")
    assert parse_entries("") == ()


def test_round_trip_detects_hand_edits() -> None:
    assert round_trips("a\n§\nb\n")
    assert not round_trips("a\n§\n\n§\nb")
    assert not round_trips("a  \n§\nb")


def test_usage_percent_is_floored_capped_and_rendered_with_thousands_separators() -> None:
    usage = measure("memory", ["x" * 735, "y" * 736], 2200)
    assert (usage.chars, usage.percent, usage.entry_count) == (1474, 67, 2)
    assert usage.gauge == "67% — 1,474/2,200 chars"
    assert measure("user", ["z" * 3000], 1375).percent == 100


def test_the_rendered_block_has_rules_header_and_entries() -> None:
    entries = ["x" * 735, "y" * 736]
    block = render_block("memory", entries, measure("memory", entries, 2200))
    lines = block.split("\n")
    assert lines[0] == "═" * 46 == RULE
    assert lines[1] == "MEMORY (your personal notes) [67% — 1,474/2,200 chars]"
    assert lines[2] == "═" * 46
    assert "\n".join(lines[3:]) == serialize_entries(entries)
    user = render_block("user", ["Name is Ada"], measure("user", ["Name is Ada"], 1375))
    assert user.split("\n")[1] == "USER PROFILE (who the user is) [0% — 11/1,375 chars]"


def test_an_empty_store_renders_no_block() -> None:
    assert render_block("memory", [], measure("memory", [], 2200)) == ""


def test_content_with_a_lone_delimiter_line_is_refused_because_it_would_split() -> None:
    with pytest.raises(InvalidWriteError, match="only '§'"):
        check_content("first\n§\nsecond")
    with pytest.raises(InvalidWriteError, match="cannot be empty"):
        check_content("   \n ")
    assert check_content("  keep § inline \n") == "keep § inline"


def test_locate_prefers_an_exact_entry_over_substring_matches() -> None:
    entries = ("dark mode", "dark mode in the terminal too")
    assert locate(entries, "dark mode") == 0
    assert locate(entries, "terminal") == 1


def test_locate_fails_closed_on_distinct_matches_and_resolves_identical_ones_to_the_first() -> None:
    with pytest.raises(AmbiguousMatchError) as info:
        locate(("task: a", "task: b"), "task:")
    assert info.value.previews == ("task: a", "task: b")
    assert locate(("other", "dup entry", "dup entry"), "dup") == 1
    with pytest.raises(NoMatchError):
        locate(("a",), "zzz")


def test_a_batch_checks_the_budget_on_the_final_state_only() -> None:
    current = ("aaa", "bbb")
    plan = plan_write(
        "memory",
        current,
        [AddOp("ccc"), RemoveOp("aaa")],  # 15 chars in between, 9 at the end
        limit=9,
        overflow="reject",
        batch=True,
    )
    assert plan.entries == ("bbb", "ccc")
    with pytest.raises(StoreFullError, match=r"No operations were applied"):
        plan_write("memory", current, [AddOp("ccc")], limit=9, overflow="reject", batch=True)


def test_a_failing_operation_names_its_position_in_the_batch() -> None:
    with pytest.raises(NoMatchError, match=r"^Operation 2: No entry contains 'zzz'.*all-or-nothing"):
        plan_write(
            "memory", ("aaa",), [AddOp("b"), ReplaceOp("zzz", "c")], limit=100, overflow="reject", batch=True
        )


def test_eviction_drops_the_oldest_entries_but_never_the_new_one() -> None:
    plan = plan_write(
        "memory", ("old1", "old2", "keep"), [AddOp("new!")], limit=12, overflow="evict_oldest", batch=False
    )
    assert plan.entries == ("keep", "new!")
    assert plan.evicted == ("old1", "old2")
