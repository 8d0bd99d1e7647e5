"""Text diffs for the lint: which lines changed, quoted short, and what kind of value changed.

`hunks(a, b)` compares two texts line by line and returns each changed run of lines with
its character range in the new text (so a keel slot map can name where it sits). `value_kind`
looks at the words that differ inside a hunk and names the volatile value they hold, if
any: a clock time, a random id, a usage percentage, a date, or a counter — in that order of
precedence, since a timestamp that holds both a date and a time changes with the time.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "Hunk",
    "ValueKind",
    "changed_span",
    "changed_words",
    "hunks",
    "quote",
    "shared_prefix",
    "value_kind",
]

ValueKind: TypeAlias = Literal["clock", "random_id", "usage", "date", "counter"]

_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b|T\d{2}:?\d{2}")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\b")
_HEXISH = re.compile(r"^(?=.*\d)(?=.*[a-zA-Z])[0-9a-fA-F]{8,}$")
_TOKENISH = re.compile(r"^(?=.*\d)(?=.*[a-z])(?=.*[A-Z])[A-Za-z0-9_\-]{12,}$")
_PERCENT = re.compile(r"\d+(?:[.,]\d+)?\s?%")
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri|sat|sun"
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|\b(?:{_MONTHS}|{_DAYS})\b", re.IGNORECASE
)
_NUMBER = re.compile(r"^[#(\[]*\d[\d,._]*[)\].,:;]*$")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Hunk:
    """One changed run of lines: the lines removed from `a` and added in `b`.

    `start`/`end` are the character range in `b` the added lines cover (for a pure removal,
    an empty range where the lines were).
    """

    removed: tuple[str, ...]
    added: tuple[str, ...]
    start: int
    end: int


def hunks(a: str, b: str) -> list[Hunk]:
    """The changed line runs between `a` and `b`, in order."""
    offsets = [0]
    for line in b.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    old, new = a.splitlines(), b.splitlines()
    out: list[Hunk] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            # Line for line: one hunk per line, so each changed value is judged on its own.
            for k in range(i2 - i1):
                out.append(Hunk((old[i1 + k],), (new[j1 + k],), offsets[j1 + k], offsets[j1 + k + 1]))
        elif tag != "equal":
            out.append(Hunk(tuple(old[i1:i2]), tuple(new[j1:j2]), offsets[j1], offsets[j2]))
    if not out and a != b:  # only line endings differ (a trailing newline, CRLF)
        out.append(Hunk((repr(a[-20:]),), (repr(b[-20:]),), max(len(b) - 1, 0), len(b)))
    return out


def changed_span(hunk: Hunk) -> tuple[int, int]:
    """The character range in the new text that actually changed: the hunk's range without the
    text its old and new lines share at either end (one character, for a pure removal)."""
    old, new = "\n".join(hunk.removed), "\n".join(hunk.added)
    head = shared_prefix(old, new)
    tail = shared_prefix(old[head:][::-1], new[head:][::-1])
    start = hunk.start + head
    return start, max(hunk.start + len(new) - tail, start + 1)


def _word_span(text: str, start: int, end: int) -> str:
    """The whitespace-delimited words around characters [start, end) of `text`."""
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def changed_words(before: str, after: str) -> list[tuple[str, str]]:
    """Pairs of (old words, new words) around each character-level change."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    pairs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            pairs.append((_word_span(before, i1, i2), _word_span(after, j1, j2)))
    return pairs


def _kind_of(old: str, new: str) -> ValueKind | None:
    both = f"{old} {new}"
    if _CLOCK.search(old) and _CLOCK.search(new):
        return "clock"
    words = _WORD.findall(both)
    if _UUID.search(both) or any(_HEXISH.match(w.strip("\"'.,;:()[]")) for w in words):
        return "random_id"
    if any(_TOKENISH.match(w.strip("\"'.,;:()[]")) for w in words):
        return "random_id"
    if _PERCENT.search(old) and _PERCENT.search(new):
        return "usage"
    if _DATE.search(old) and _DATE.search(new):
        return "date"
    if old and new and all(_NUMBER.match(w) for w in _WORD.findall(both)):
        return "counter"
    return None


_ORDER: tuple[ValueKind, ...] = ("clock", "random_id", "usage", "date", "counter")


def value_kind(before: str, after: str) -> ValueKind | None:
    """The volatile value that changed between two texts, if the change is one (see the module doc)."""
    kinds = {k for old, new in changed_words(before, after) if (k := _kind_of(old, new)) is not None}
    return next((k for k in _ORDER if k in kinds), None)


def _window(line: str, start: int, width: int) -> str:
    """`width` characters of `line` showing position `start`, with ellipses where cut."""
    if len(line) <= width:
        return line
    lo = max(0, min(start - width // 3, len(line) - width))
    text = line[lo : lo + width]
    return ("…" if lo else "") + text + ("…" if lo + width < len(line) else "")


def quote(hunk: Hunk, *, max_lines: int = 6, width: int = 120) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The hunk's removed and added lines, each cut to `width` around where it changed, at most
    `max_lines` of each (the last says how many more there were). Lines without a letter or a
    digit (rules, delimiters, blank lines) are left out when others changed too."""
    removed, added = _content(hunk.removed), _content(hunk.added)
    starts_old = [0] * len(removed)
    starts_new = [0] * len(added)
    if len(removed) == len(added):
        for k, (a, b) in enumerate(zip(removed, added, strict=True)):
            common = shared_prefix(a, b)
            starts_old[k] = starts_new[k] = common
    return (
        _cap([_window(x, s, width) for x, s in zip(removed, starts_old, strict=True)], max_lines),
        _cap([_window(x, s, width) for x, s in zip(added, starts_new, strict=True)], max_lines),
    )


def _content(lines: tuple[str, ...]) -> list[str]:
    """The lines that say something: rules (`════`), delimiters (`§`) and blank lines dropped,
    unless nothing else is left."""
    kept = [line for line in lines if any(ch.isalnum() for ch in line)]
    return kept or list(lines)


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share (a binary search of slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cap(lines: list[str], most: int) -> tuple[str, ...]:
    if len(lines) <= most:
        return tuple(lines)
    return (*lines[: most - 1], f"… ({len(lines) - most + 1} more lines)")
