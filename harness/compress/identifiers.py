"""The identifier index: exact strings from the compressed middle, kept verbatim.

A summary paraphrases; identifiers do not survive paraphrase. Before the summary call the
middle is scanned mechanically (no model) for the strings a later question is most likely
to need exactly — names, numbers with their units, dates, paths, URLs, e-mail addresses,
version strings, ids, quoted strings — and the summary message carries them as an index.

Extraction is deliberately simple and deterministic: regular expressions over the user and
assistant text and the tool-call arguments, in order of first appearance, de-duplicated,
capped by count and characters so the index never outgrows the summary it sits beside.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from harness.types import Message

__all__ = ["MAX_INDEX_CHARS", "MAX_INDEX_ITEMS", "extract_identifiers"]

MAX_INDEX_ITEMS = 80
MAX_INDEX_CHARS = 2_000

# Order matters: earlier patterns claim their span first, so "v2.3.1" is a version and not
# the number "2.3"; a URL is not also split into a path and a name.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"https?://[^\s<>\"')\]]+"),  # URLs
    re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),  # e-mail addresses
    re.compile(r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|(?:\.{1,2}/)?\b[\w-]+(?:/[\w.-]+)+\.\w{1,6}\b"),  # paths
    re.compile(r"\b[A-Z][a-z]+/[A-Z][A-Za-z_]+\b"),  # time zones and other Word/Word names
    re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?\b"),  # ISO dates
    re.compile(
        r"\b(?:\d{1,2} )?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
        r"(?: \d{1,2}(?:st|nd|rd|th)?,?)?(?: \d{4})?\b"
    ),  # written dates
    re.compile(r"\b\d{1,2}:\d{2}(?:\s?[AaPp][Mm])?\b"),  # clock times
    re.compile(r"\bv?\d+\.\d+(?:\.\d+)+(?:[-+][\w.]+)?\b|\bv\d+(?:\.\d+)?\b"),  # versions
    re.compile(r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+\b"),  # ids
    re.compile(r"\b[A-Z]{2,}[A-Z0-9]*\b"),  # acronyms and codes
    re.compile(
        r"[$€£]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?"
        r"(?:\s?(?:%|°[CF]|(?:ms|s|sec|min|h|hrs?|days?|weeks?|months?|years?|kb|mb|gb|tb|k|m|km|kg|g|lbs?|mi|px"
        r"|usd|eur|gbp|am|pm)\b))?",
        re.IGNORECASE,
    ),  # numbers with their units
    re.compile(r"\"([^\"\n]{3,80})\"|“([^”\n]{3,80})”|`([^`\n]{2,80})`"),  # quoted strings
    _NAMES := re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'’-]*[a-z][\w'’-]*(?:\s+[A-Z][\w'’-]*[a-z][\w'’-]*)*"),
)

# Capitalized words that are grammar, not names.
_NOT_NAMES = frozenset(
    [
        "I",
        "I'm",
        "I've",
        "I'll",
        "I'd",
        "The",
        "A",
        "An",
        "And",
        "But",
        "Or",
        "So",
        "If",
        "Then",
        "When",
        "While",
        "Yes",
        "No",
        "Ok",
        "Okay",
        "Thanks",
        "Thank",
        "Hi",
        "Hello",
        "Hey",
        "Sure",
        "Please",
        "Also",
        "Just",
        "Well",
        "Oh",
        "Great",
        "Good",
        "Nice",
        "Cool",
        "Wow",
        "Sorry",
        "Maybe",
        "Let",
        "Lets",
        "My",
        "Your",
        "Our",
        "Their",
        "His",
        "Her",
        "Its",
        "We",
        "You",
        "They",
        "He",
        "She",
        "It",
        "This",
        "That",
        "These",
        "Those",
        "There",
        "Here",
        "What",
        "Why",
        "How",
        "Who",
        "Which",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Today",
        "Tomorrow",
        "Yesterday",
    ]
)
_CONTRACTIONS = frozenset({"I'm", "I’m", "I've", "I'll", "I'd", "It's", "That's", "There's", "Let's"})
_TRIVIAL_NUMBERS = frozenset({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"})


def _texts(messages: Sequence[Message]) -> Iterable[str]:
    for m in messages:
        if m.summary or m.role == "system":
            continue
        if m.role in ("user", "assistant") and m.content:
            yield m.content
        for call in m.tool_calls:
            yield call.arguments


def _trim_grammar(name: str) -> str:
    """Drop grammar words at either end of a run of capitalized words ("I'm Caroline" → "Caroline")."""
    words = name.split()
    while words and words[0].rstrip("'’s") in _NOT_NAMES | _CONTRACTIONS:
        words.pop(0)
    while words and words[-1] in _NOT_NAMES:
        words.pop()
    return " ".join(words)


def _keep(item: str) -> bool:
    item = item.strip()
    if len(item) < 2 or item in _TRIVIAL_NUMBERS:
        return False
    return item not in _NOT_NAMES


def _scan(text: str) -> list[tuple[int, str]]:
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, str]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                continue
            groups = [g for g in match.groups() if g] if match.re.groups else []
            item = (groups[0] if groups else match.group(0)).strip().rstrip(",.;:")
            if pattern is _NAMES:
                item = _trim_grammar(item)
            if _keep(item):
                taken.append((start, end))
                found.append((start, item))
    found.sort()
    return found


def extract_identifiers(
    messages: Sequence[Message], *, max_items: int = MAX_INDEX_ITEMS, max_chars: int = MAX_INDEX_CHARS
) -> list[str]:
    """The identifiers in `messages`, verbatim, in order of first appearance.

    Args:
        messages: the compressed middle (summaries and system messages are skipped).
        max_items: at most this many identifiers.
        max_chars: at most this many characters in all (separators included).
    """
    seen: set[str] = set()
    out: list[str] = []
    used = 0
    for text in _texts(messages):
        for _, item in _scan(text):
            key = item.casefold()
            if key in seen:
                continue
            if len(out) >= max_items or used + len(item) + 2 > max_chars:
                return out
            seen.add(key)
            out.append(item)
            used += len(item) + 2
    return out
