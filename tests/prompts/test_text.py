"""Every shipped prompt renders: files load, templates fill, nothing is left unfilled."""

from __future__ import annotations

import re

import pytest

from prompts import load_text
from prompts._text import text_names

TEMPLATES = {
    "summarize",
    "summarize_update",
    "search_summary",
    "summary_identifiers",
    "semantic_extract",
    "semantic_reconcile",
    "retention_question",
    "retention_hint_choice",
    "retention_roles",
}
TEMPLATE_FIELDS = {
    "date": "2026-11-22",
    "target_tokens": "2,000",
    "provider_context": "",
    "turns": "[USER]: hi",
    "previous_summary": "## Goal\nx",
    "topic": "tea",
    "transcript": "[USER]: hi",
    "identifiers": "JIRA-4312; ./deploy.sh",
    "user": "We ship every Friday.",
    "assistant": "Noted.",
    "existing": "[1] The user deploys on Fridays",
    "candidate": "The user deploys on Thursdays now",
    "question": "When did Dana move?",
    "hint": "",
    "first": "Not mentioned in the conversation",
    "second": "in May",
}


@pytest.mark.parametrize("name", text_names())
def test_every_prompt_renders_without_leftover_placeholders(name: str) -> None:
    text = load_text(name)
    assert text.strip(), f"{name}.md is empty"
    rendered = text.format(**TEMPLATE_FIELDS) if name in TEMPLATES else text
    assert not re.search(r"\{[a-z_]+\}", rendered), f"{name}.md has an unfilled placeholder"


def test_unknown_prompt_names_fail_clearly() -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_text("no_such_prompt")
