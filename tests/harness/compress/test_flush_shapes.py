"""Flush request shapes: the requests they build and how replies become writes or refusals."""

from __future__ import annotations

import json

import pytest

from harness.compress.flush_shapes import (
    FLUSH_SHAPES,
    FlushShape,
    build_flush_shape_request,
    read_flush_reply,
)
from harness.types import Message, ModelReply, ToolCall, ToolSpec
from prompts._text import load_text

MEMORY = ToolSpec("memory", "Save durable facts.", {"type": "object"})
SEARCH = ToolSpec("session_search", "Search old sessions.", {"type": "object"})
SYSTEM = "You are keel. Write entries as declarative facts: User prefers concise answers."
HISTORY = (Message("user", "I'm Sam and I use vim."), Message("assistant", "Noted."))


def _reply(text: str = "", *calls: tuple[str, object]) -> ModelReply:
    return ModelReply(
        message=Message(
            "assistant",
            text,
            tool_calls=tuple(
                ToolCall(f"c{i}", name, args if isinstance(args, str) else json.dumps(args))
                for i, (name, args) in enumerate(calls)
            ),
        )
    )


@pytest.mark.parametrize("shape", FLUSH_SHAPES)
def test_every_shape_keeps_system_and_tools_and_only_appends_its_note(shape: FlushShape) -> None:
    req = build_flush_shape_request(
        shape, system=SYSTEM, messages=HISTORY, tools=(MEMORY, SEARCH), max_tokens=200
    )
    assert req.system == SYSTEM and req.tools == (MEMORY, SEARCH)
    assert req.messages[:-1] == HISTORY and req.messages[-1].role == "user"
    assert req.purpose == "flush" and req.max_tokens == 200
    assert (
        req.tool_choice
        == {"free_calls": "auto", "forced_call": "memory", "forced_batch": "memory", "text_list": "none"}[
            shape
        ]
    )


def test_a_forced_shape_without_the_memory_tool_falls_back_to_no_tool_choice() -> None:
    req = build_flush_shape_request(
        "forced_batch", system=SYSTEM, messages=HISTORY, tools=(SEARCH,), max_tokens=None
    )
    assert req.tool_choice == "none"


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


def test_entries_that_echo_the_instructions_are_refused() -> None:
    note_echo = load_text("flush_list").splitlines()[2][:120]
    text = f"user: {note_echo}\nuser: User prefers concise answers.\nuser: Sam uses vim."
    reading = read_flush_reply("text_list", _reply(text), instructions=[SYSTEM])
    assert [w.content for w in reading.writes] == ["Sam uses vim."]
    assert {r.reason for r in reading.refusals} == {
        "repeats the instructions instead of a fact from the conversation"
    }


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


def test_a_label_with_no_value_is_refused_but_a_fact_ending_in_a_colon_is_kept() -> None:
    text = "memory: timezone:\nuser: time zone:\nmemory: quill's deploy checklist has three steps, in order:"
    reading = read_flush_reply("text_list", _reply(text))
    assert [w.content for w in reading.writes] == ["quill's deploy checklist has three steps, in order:"]
    assert [r.text for r in reading.refusals] == ["timezone:", "time zone:"]
    assert {r.reason for r in reading.refusals} == {"a label with no value (e.g. 'timezone:')"}


def test_facts_the_conversation_never_stated_and_bare_names_are_refused() -> None:
    said = (
        "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.\n"
        "Melanie: That's great! I painted a lake sunrise last year, my kids loved it."
    )
    text = "\n".join(
        [
            "user: Caroline",  # a name, not a fact
            "user: Caroline is a 25-year-old software engineer who works at a tech company.",  # invented
            "memory: Melanie is a senior data scientist at a bank.",  # invented, no number
            "user: Caroline went to an LGBTQ support group.",  # said
            "memory: Melanie painted a lake sunrise last year.",  # said
        ]
    )
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [w.content for w in reading.writes] == [
        "Caroline went to an LGBTQ support group.",
        "Melanie painted a lake sunrise last year.",
    ]
    reasons = {r.text: r.reason for r in reading.refusals}
    assert reasons["Caroline"].startswith("a bare word or name, not a fact")
    for invented in (
        "Caroline is a 25-year-old software engineer who works at a tech company.",
        "Melanie is a senior data scientist at a bank.",
    ):
        assert reasons[invented].startswith("not in the conversation")
    # Without the conversation, only the bare name is refused.
    unchecked = read_flush_reply("text_list", _reply(text))
    assert [r.text for r in unchecked.refusals] == ["Caroline"]


def test_a_passage_keeps_the_sentences_that_are_facts_and_names_who_they_are_about() -> None:
    said = "Caroline: I went to the LGBTQ support group yesterday. I paint landscapes on weekends."
    passage = (
        "Caroline is a 25-year-old counselor. She went to an LGBTQ support group. "
        "She paints landscapes on weekends."
    )
    for reply in (
        _reply(f"user: {passage}"),
        _reply("", ("memory", {"target": "user", "action": "add", "content": passage})),
    ):
        reading = read_flush_reply("text_list", reply, said=said)
        assert [w.content for w in reading.writes] == [
            "Caroline went to an LGBTQ support group.",
            "Caroline paints landscapes on weekends.",
        ]
        assert reading.refusals == ()
    # A passage with no sentence that stands is refused whole, with the first sentence's reason.
    invented = "Caroline is a 25-year-old counselor. She owns a boat."
    reading = read_flush_reply("text_list", _reply(f"user: {invented}"), said=said)
    assert reading.writes == () and reading.refusals[0].text == invented
    assert reading.refusals[0].reason.startswith("not in the conversation")


def test_words_that_label_a_fact_do_not_count_against_it() -> None:
    said = "Hi, I'm Sam. I use vim. Our database is PostgreSQL 16."
    text = "user: Name: Sam\nuser: Preferences: uses vim\nmemory: Database: PostgreSQL 16\nmemory: Database: MySQL 8"
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [w.content for w in reading.writes] == [
        "Name: Sam",
        "Preferences: uses vim",
        "Database: PostgreSQL 16",
    ]
    assert [r.text for r in reading.refusals] == ["Database: MySQL 8"]
