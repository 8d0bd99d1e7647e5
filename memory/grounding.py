"""Is a fact a model wrote down supported by what was actually said?

Small models invent plausible detail when asked to list facts: "Caroline is a 25-year-old
software engineer" from a conversation that never gave her age or job, "Sam is using Rust
version 1.56.0" from a bare "I maintain a Rust web service". Both the semantic provider's
learning and the compression flush keep a fact only when it is `grounded` in the text it
came from: every token with a digit in it occurs there as written, and at least `share` of
its other content words occur there too, compared by a crude stem (so "deploys" matches
"deploy" and "uses" "use"). Words about the user as such ("user", "user's") are not content.
"""

from __future__ import annotations

import re

from memory._words import STOPWORDS

__all__ = ["content_stems", "content_words", "grounded", "stem"]

_TOKEN = re.compile(r"[a-z0-9][a-z0-9.\-']*")
_ABOUT_THE_USER = frozenset({"user", "user's", "users"})


def _tokens(text: str) -> list[str]:
    return [t.strip(".-'") for t in _TOKEN.findall(text.lower())]


def stem(word: str) -> str:
    """A crude stem: a plural or verb ending off, then the first five letters."""
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


def content_words(text: str) -> list[str]:
    """The lower-cased words of `text` that carry content (no stopwords, no "user")."""
    return [t for t in _tokens(text) if t and t not in STOPWORDS and t not in _ABOUT_THE_USER]


def content_stems(text: str) -> set[str]:
    """The stems of `content_words(text)`."""
    return {stem(w) for w in content_words(text)}


def grounded(
    candidate: str, source: str, *, share: float = 0.6, labels: frozenset[str] = frozenset()
) -> bool:
    """Whether the fact `candidate` is supported by the words of `source` (see the module).

    `labels`: words that name what kind of fact it is ("name", "preferences") rather than
    state it; they are not counted either way.
    """
    said = set(_tokens(source))
    stems = {stem(t) for t in said}
    words = [w for w in content_words(candidate) if w not in labels]
    if not words:
        return False
    if any(any(c.isdigit() for c in w) and w not in said for w in words):
        return False
    return sum(stem(w) in stems for w in words) / len(words) >= share
