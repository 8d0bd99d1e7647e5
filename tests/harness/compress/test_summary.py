"""The summary's wording: the prompt, the reference-only message with its index, the fallback."""

from __future__ import annotations

from harness.compress.summary import fallback_summary, serialize_turns, summary_message, summary_prompt
from harness.types import Message, ToolCall


def test_summary_prompt_fills_the_template_and_escapes_provider_context() -> None:
    text = summary_prompt(
        "[USER]: hi",
        date="2026-11-22",
        target_tokens=2000,
        previous_summary=None,
        provider_context="<b>x</b>",
    )
    assert "TURNS TO SUMMARIZE:\n\n[USER]: hi" in text
    assert "2026-11-22" in text and "2,000" in text
    assert "<b>" not in text and "<memory-provider-context>" in text
    update = summary_prompt(
        "[USER]: more", date="2026-11-22", target_tokens=2000, previous_summary="## Goal\nold goal"
    )
    assert "PREVIOUS CHECKPOINT:\n\n## Goal\nold goal" in update


def test_summary_message_is_marked_reference_only() -> None:
    msg = summary_message("## Goal\nship it")
    assert msg.summary and msg.role == "user"
    assert msg.content.startswith("[CONTEXT CHECKPOINT — REFERENCE ONLY]")
    assert "## Goal\nship it" in msg.content


def test_fallback_summary_is_deterministic_and_keeps_the_latest_ask() -> None:
    middle = [
        Message("user", "please rename the config loader"),
        Message("assistant", "", tool_calls=(ToolCall("c", "edit", '{"file": "config.py"}'),)),
        Message("tool", '{"success": false, "error": "permission denied"}', tool_call_id="c"),
    ]
    a = fallback_summary(middle, previous_summary="## Goal\nearlier")
    assert a == fallback_summary(middle, previous_summary="## Goal\nearlier")
    assert "please rename the config loader" in a
    assert 'called edit({"file": "config.py"})' in a
    assert "permission denied" in a
    assert "earlier" in a


def test_serialized_turns_skip_previous_summaries() -> None:
    text = serialize_turns([summary_message("old checkpoint"), Message("user", "new")])
    assert "old checkpoint" not in text and "[USER]: new" in text


def test_summary_message_carries_the_identifier_index_verbatim_and_the_search_pointer() -> None:
    msg = summary_message(
        "## Goal\nship it", identifiers=["JIRA-4312", "./scripts/deploy.sh"], search_pointer=True
    )
    assert "JIRA-4312; ./scripts/deploy.sh" in msg.content
    assert "session_search" in msg.content
    # the end marker still closes the checkpoint
    assert msg.content.rstrip().endswith(summary_message("x").content.rstrip().splitlines()[-1])


def test_summary_message_without_index_or_pointer_mentions_neither() -> None:
    msg = summary_message("body")
    assert "session_search" not in msg.content and "verbatim" not in msg.content
