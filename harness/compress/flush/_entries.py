"""The checks one candidate fact must pass before the flush writes it.

A small model's flush reply mixes real facts with echoes of its instructions, labels with no
value, "nothing to save", passages copied from the chat and details it invented. `accepted`
keeps what is a fact from the conversation and names the reason for the rest; a passage
that fails as a whole is kept sentence by sentence where each sentence passes on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.grounding import Said, content_words, grounded, meaning_problem

__all__ = [
    "FACT_LABELS",
    "GROUNDING_SHARE",
    "MAX_ENTRY",
    "NOTHING",
    "NO_SNAPSHOT",
    "Instructions",
    "Snapshot",
    "accepted",
    "check_entry",
]

MAX_ENTRY = 300
"""Longer 'facts' are a paragraph copied from the conversation, not a memory entry."""
# Most of a flushed fact's content words must have been said, as the semantic provider asks
# of a fact from one exchange; the words a flush entry uses to say what kind of fact it is
# (the categories the flush note asks for: "Name: Sam", "Preferences: uses vim") are not
# counted, since the conversation rarely uses them.
GROUNDING_SHARE = 0.6
FACT_LABELS = frozenset(
    [
        "name",
        "names",
        "named",
        "role",
        "roles",
        "preference",
        "preferences",
        "prefers",
        "correction",
        "corrections",
        "environment",
        "tool",
        "tools",
        "project",
        "projects",
        "convention",
        "conventions",
        "detail",
        "details",
    ]
)
NOTHING = re.compile(r"^\s*(?:none|nothing(?: to save)?|no durable facts?)[.!]?\s*$", re.I)
"""A reply or line that says there is nothing to save."""
_WORD = re.compile(r"[a-z0-9']+")
_GREETING = re.compile(r"^(?:hello|hi|hey|good (?:morning|afternoon|evening)|welcome)\b[\s,!.]", re.I)
_CLAUSE = re.compile(r",|;|\(|\)|\s[-–—]\s|\s(?:and|but|who|which|where)\s", re.I)
_RUN = 7
"""A run of this many words copied from the instructions marks an entry as an echo."""


@dataclass(frozen=True, slots=True)
class Instructions:
    """The words of what the model was told (system prompt, tool descriptions, the note)."""

    words: frozenset[str]
    runs: frozenset[tuple[str, ...]]

    @classmethod
    def of(cls, texts: Sequence[str]) -> Instructions:
        words: set[str] = set()
        runs: set[tuple[str, ...]] = set()
        for text in texts:
            seq = _WORD.findall(text.lower())
            words.update(seq)
            runs.update(tuple(seq[i : i + _RUN]) for i in range(len(seq) - _RUN + 1))
        return cls(frozenset(words), frozenset(runs))

    def echoed_by(self, content: str) -> bool:
        """True when an entry is mostly the instructions' own words (a small model echoing them)."""
        seq = _WORD.findall(content.lower())
        words = set(seq)
        if len(words) >= 4 and len(words & self.words) / len(words) >= 0.8:
            return True
        return any(tuple(seq[i : i + _RUN]) in self.runs for i in range(len(seq) - _RUN + 1))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The memory the model was shown, entry by entry: an entry that one of them already
    says (every content word and number) is "already in memory", not an echo of the
    instructions — and a corrected value ("Node 22" where memory says "Node 18") is new."""

    entries: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str) -> Snapshot:
        parts = (p.strip() for line in text.splitlines() for p in line.split("§"))
        return cls(tuple(p for p in parts if len(content_words(p)) >= 2))

    def holds(self, content: str) -> bool:
        return bool(content_words(content)) and any(grounded(content, e, share=1.0) for e in self.entries)


NO_SNAPSHOT = Snapshot()


def _said_in_full(text: str, said: str | None) -> bool:
    """Every content word of `text` (fact labels aside) was said in the conversation."""
    words = [w for w in content_words(text) if w not in FACT_LABELS]
    return said is not None and bool(words) and grounded(text, said, share=1.0, labels=FACT_LABELS)


def check_entry(
    content: str, note_words: Instructions, said: str | None, memory: Snapshot = NO_SNAPSHOT
) -> str | None:
    """Why `content` is not a fact to save, or None when it is one."""
    text = content.strip()
    if not text:
        return "empty entry"
    if text.endswith(":") and len(text.split()) <= 3:
        return "a label with no value (e.g. 'timezone:')"
    if NOTHING.match(text) or text.lower().startswith("nothing to save"):
        return "says there is nothing to save"
    if len(text) > MAX_ENTRY:
        return f"longer than {MAX_ENTRY} characters: a passage, not a fact (save each fact in it on its own)"
    if text.endswith("?") or _GREETING.match(text):
        return "a question or a greeting copied from the chat, not a fact"
    if memory.holds(text):
        return "already in memory: an entry there says this (nothing new to save)"
    if note_words.echoed_by(text) and not _said_in_full(text, said):
        # "The user's name is Sam" is mostly the instructions' words, but the user said it.
        return "repeats the instructions instead of a fact from the conversation"
    if len(content_words(text)) < 2:
        return "a bare word or name, not a fact (say what it is: 'the user's name is Sam')"
    if said is not None and not grounded(text, said, share=GROUNDING_SHARE, labels=FACT_LABELS):
        return "not in the conversation: a number or most of its words were never said (an invented detail?)"
    if said is not None and _invented_clause(text, said):
        return "not in the conversation: one part of it was never said (an invented detail?)"
    if said is not None and _copied_line(text, said):
        return "a chat line copied whole with its speaker, not a fact: say what it tells about the user"
    return None if said is None else meaning_problem(text, Said(said))


_SPEAKER = re.compile(r"^([A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?):\s+(\S.*)")


def _copied_line(text: str, said: str) -> bool:
    """`Caroline: The support group has made me feel…` — a line of the chat with its speaker."""
    m = _SPEAKER.match(text)
    if m is None:
        return False
    flat = " ".join(said.split()).lower()
    return f"{m.group(1)}: {' '.join(m.group(2).split())[:40]}".lower() in flat


def _invented_clause(text: str, said: str) -> bool:
    """A clause of the entry is mostly unsaid words, though the entry as a whole passes:
    "User is Tim, a software engineer" when nobody said what Tim does."""
    clauses = [c for c in _CLAUSE.split(text) if c.strip()]
    if len(clauses) < 2:
        return False
    for clause in clauses:
        if [w for w in content_words(clause) if w not in FACT_LABELS] and not grounded(
            clause, said, share=GROUNDING_SHARE, labels=FACT_LABELS
        ):
            return True
    return False


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PRONOUN = re.compile(r"^(?:she|he|they)\b", re.IGNORECASE)
_NAME = re.compile(r"^([A-Z][\w'-]+)\s")


def _sentences(passage: str) -> list[str]:
    """A passage's sentences, a leading she/he/they replaced by the name the passage opens
    with ("Caroline is ... She paints." → "Caroline paints." reads on its own in MEMORY.md)."""
    parts = [p.strip() for p in _SENTENCE_END.split(passage.strip()) if p.strip()]
    name = _NAME.match(parts[0]) if parts else None
    if name is None or _PRONOUN.match(name.group(1)):
        return parts
    return [_PRONOUN.sub(name.group(1), p, count=1) for p in parts]


def accepted(
    content: str, note_words: Instructions, said: str | None, memory: Snapshot = NO_SNAPSHOT
) -> tuple[list[str], str | None]:
    """The entries to write for one content (its checked sentences when it is a passage),
    or the reason it is refused."""
    problem = check_entry(content, note_words, said, memory)
    if problem is None:
        return [content.strip()], None
    sentences = _sentences(content)
    if len(sentences) < 2:
        return [], problem
    # A small model often writes one passage instead of facts, an invented detail in one
    # sentence of it: keep each sentence that is a fact on its own.
    kept = [p for p in sentences if check_entry(p, note_words, said, memory) is None]
    return (kept, None) if kept else ([], problem)
