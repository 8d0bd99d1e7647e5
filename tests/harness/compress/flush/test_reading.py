"""How a flush reply becomes writes and refusals, and the one check for a claimed save."""

from __future__ import annotations

import json

import pytest

from harness.compress.flush import read_flush_reply
from harness.compress.flush._reading import claims_a_save
from tests.harness.compress.flush.flushkit import reply as _reply


def test_a_batch_call_becomes_one_write_per_operation_with_the_calls_target() -> None:
    reply = _reply(
        "",
        (
            "memory",
            {
                "target": "user",
                "operations": [
                    {"action": "add", "content": "Sam uses vim"},
                    {"action": "add", "content": "Sam's time zone is CET"},
                    {"action": "add", "content": ""},
                ],
            },
        ),
    )
    reading = read_flush_reply("forced_batch", reply)
    assert [(w.target, w.content) for w in reading.writes] == [
        ("user", "Sam uses vim"),
        ("user", "Sam's time zone is CET"),
    ]
    assert json.loads(reading.writes[0].arguments) == {
        "action": "add",
        "target": "user",
        "content": "Sam uses vim",
    }
    assert [r.reason for r in reading.refusals] == ["empty entry"]


def test_a_batch_call_cut_off_by_the_output_cap_keeps_the_operations_before_the_cut() -> None:
    # as the local model's parser hands it on: the whole unfinished call, name and all
    cut = (
        '{"name": "memory", "arguments": {"target": "user", "operations": ['
        '{"action": "add", "content": "Lars is the DBA for a retail inventory system."}, '
        '{"action": "add", "content": "Lars releases builds on itch.io first."}, '
        '{"action": "add", "content": "And I like detailed explanations, I\'m st'
    )
    reading = read_flush_reply("forced_batch", _reply("", ("memory", cut)))
    assert [(w.target, w.content) for w in reading.writes] == [
        ("user", "Lars is the DBA for a retail inventory system."),
        ("user", "Lars releases builds on itch.io first."),
    ]
    assert len(reading.refusals) == 1
    assert reading.refusals[0].reason.startswith("cut off before it was complete")
    assert reading.refusals[0].text.startswith('{"action": "add", "content": "And I like')


def test_a_cut_off_call_with_no_complete_operation_is_refused_whole() -> None:
    cut = '{"target": "memory", "operations": [{"action": "add", "content": "Lars uses Mk'
    reading = read_flush_reply("forced_batch", _reply("", ("memory", cut)))
    assert reading.writes == ()
    assert [(r.text, r.reason) for r in reading.refusals] == [
        (cut, "the memory call's arguments are not valid JSON")
    ]


def test_operations_kept_from_a_cut_off_call_pass_the_same_checks_as_any_other() -> None:
    cut = (
        '{"target": "memory", "operations": [{"action": "add", "content": "quill deploys on Fridays"}, '
        '{"action": "add", "content": ""}, {"action": "add", "content": "quill runs on'
    )
    reading = read_flush_reply("forced_batch", _reply("", ("memory", cut)))
    assert [(w.target, w.content) for w in reading.writes] == [("memory", "quill deploys on Fridays")]
    assert len(reading.refusals) == 2 and reading.refusals[0].reason == "empty entry"
    assert reading.refusals[-1].reason.startswith("cut off")


def test_other_tools_and_unreadable_arguments_are_refused_with_reasons() -> None:
    reply = _reply("", ("session_search", {"query": "vim"}), ("memory", "{broken"), ("memory", [1]))
    reading = read_flush_reply("free_calls", reply)
    assert reading.writes == ()
    assert [r.reason for r in reading.refusals] == [
        "not available during flush: only the memory tool runs",
        "the memory call's arguments are not valid JSON",
        "the memory call's arguments are not a JSON object",
    ]


def test_list_lines_become_writes_and_other_lines_are_refused() -> None:
    text = "user: Sam uses vim.\n- memory: quill deploys on Fridays only\nSure, here you go!\n\nnone"
    reading = read_flush_reply("text_list", _reply(text))
    assert [(w.target, w.content) for w in reading.writes] == [
        ("user", "Sam uses vim."),
        ("memory", "quill deploys on Fridays only"),
    ]
    assert [(r.text, r.reason) for r in reading.refusals] == [
        ("Sure, here you go!", "not a 'user: …' or 'memory: …' line")
    ]


def test_a_call_that_saves_nothing_to_save_is_refused() -> None:
    reading = read_flush_reply(
        "free_calls", _reply("", ("memory", {"target": "user", "content": "Nothing to save."}))
    )
    assert reading.writes == () and reading.refusals[0].reason == "says there is nothing to save"


def test_a_claimed_save_without_a_call_is_flagged() -> None:
    claimed = read_flush_reply("free_calls", _reply("I've saved your editor preference to memory."))
    honest = read_flush_reply("free_calls", _reply("Nothing to save."))
    assert claimed.claimed_without_call and claimed.writes == ()
    assert not honest.claimed_without_call


@pytest.mark.parametrize(
    ("text", "claimed"),
    [
        ("I've saved your editor preference to memory.", True),
        ("Your editor preference has been recorded.", True),
        ("Nothing has been saved: it was all task progress.", False),
    ],
)
def test_the_reading_and_the_outcome_use_one_claim_check(text: str, claimed: bool) -> None:
    # One check: the reading's flag and `claims_a_save` (what the outcome records) never disagree.
    assert read_flush_reply("free_calls", _reply(text)).claimed_without_call is claimed
    assert (claims_a_save(text) is not None) is claimed


@pytest.mark.parametrize(
    "text",
    [
        "I have saved your timezone to memory.",
        "I've stored the deploy rule.",
        "Saved to memory: you prefer tabs.",
        "Your editor preference has been recorded.",
        "Memory updated with your name.",
        "I'll remember that you use PostgreSQL 15.",
    ],
)
def test_claims_of_a_save_are_recognised(text: str) -> None:
    assert claims_a_save(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Nothing to save.",
        "Nothing worth saving here.",
        "I did not save anything: it was all task progress.",
        "",
        "The user saved money on the trip.",
    ],
)
def test_declining_or_unrelated_text_is_not_a_claim(text: str) -> None:
    assert claims_a_save(text) is None


def test_duplicate_writes_are_kept_once_and_long_passages_refused() -> None:
    reply = _reply(
        "",
        ("memory", {"target": "user", "content": "Sam uses vim"}),
        ("memory", {"target": "user", "content": "sam  uses VIM"}),
        ("memory", {"target": "memory", "content": "x" * 400}),
    )
    reading = read_flush_reply("free_calls", reply)
    assert [w.content for w in reading.writes] == ["Sam uses vim"]
    assert reading.refusals[0].reason.startswith("longer than 300 characters")
