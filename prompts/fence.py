"""The `<memory-context>` fence around per-turn recall, and the sanitizers around it.

Recall rides on the current user message, never in the system prompt. It is wrapped in a
fence with a system note saying it is reference data, not user input. Text that already
contains fence tags (a provider that pre-wrapped its output, a tool result quoting one)
is cleaned first, so nothing can open or close a fence the harness did not write.
"""

from __future__ import annotations

import re

from prompts._text import load_text

__all__ = ["CLOSE_TAG", "OPEN_TAG", "attach_recall", "cap_recall", "fence_recall", "strip_fence_tags"]

OPEN_TAG = "<memory-context>"
CLOSE_TAG = "</memory-context>"

_SPAN = re.compile(r"<\s*memory-context\s*>.*?<\s*/\s*memory-context\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<\s*/?\s*memory-context\s*>", re.IGNORECASE)
_NOTE = re.compile(r"^\s*\[System note: The following is recalled memory context[^\n]*\]\s*$", re.MULTILINE)


def strip_fence_tags(text: str) -> str:
    """Remove whole fenced spans, stray fence tags and copies of the fence note."""
    cleaned = _SPAN.sub("", text)
    cleaned = _TAG.sub("", cleaned)
    return _NOTE.sub("", cleaned)


def cap_recall(recalled: str, max_chars: int) -> str:
    """At most `max_chars` of recall (every provider's together), cut at a line break, with a
    note saying how much was left out. Recall is read on every turn: a provider that returns
    a novel must not cost a turn its context window."""
    if len(recalled) <= max_chars:
        return recalled
    cut = recalled.rfind("\n", 0, max_chars + 1)
    kept = recalled[: cut if cut > max_chars // 2 else max_chars].rstrip()
    return f"{kept}\n[… {len(recalled) - len(kept):,} more characters of recall left out (recall.max_chars)]"


def fence_recall(recalled: str) -> str:
    """Wrap recalled text in the fence; empty recall gives an empty string."""
    body = strip_fence_tags(recalled).strip()
    if not body:
        return ""
    return f"{OPEN_TAG}\n{load_text('recall_note')}\n\n{body}\n{CLOSE_TAG}"


def attach_recall(user_text: str, recalled: str) -> str | None:
    """The `api_content` for a user message carrying recall, or None when there is none."""
    fenced = fence_recall(recalled)
    if not fenced:
        return None
    return f"{user_text}\n\n{fenced}"
