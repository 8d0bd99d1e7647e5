"""Does a fact mean what was said? The checks where matching words is not enough.

`grounded` asks whether a candidate's words were said; a wrong memory usually has all of
them: "exam board uses 9.81" where the user said *never* 9.81, "uses QuickBooks" where the
user said their *partner* does, "moving to Vancouver" where the user said *if I ever* moved.
`meaning_problem` looks at the clauses of the user's own words (and the tools'; never the
assistant's) that hold the candidate's *terms* — the words that name something: numbers and
versions, and words the user wrote with a capital letter (tools, places, names) — and refuses
the candidate when every clause holding one of them

- has the opposite polarity (the user denied it; or the candidate denies what they said),
- is about someone else (my partner, our CTO, my colleague …) the candidate does not name,
- is hypothetical (if, suppose, wondering …), a question, or a temporary state (this week,
  for now …) the candidate states as a plain durable fact, or
- was corrected within the next sentences ("no wait", "actually", "that's outdated", "we
  moved to …") and the new value is what the user meant.

Each check errs towards keeping: a term the user said both ways, or in another clause
plainly, is not judged. The reasons name what the user said, so they can be acted on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory._words import STOPWORDS
from memory.grounding._tokens import content_words, stem, tokens

__all__ = ["Said", "meaning_problem"]

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")
_CLAUSE = re.compile(r"[,;:—–，；]|\s(?:but|though|although|whereas|while)\s", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:not|never|no|nothing|none|neither|nor|without|hate|dislike|avoid|stopped|quit|instead of|rather than"
    r"|can't stand|no longer)\b|n't\b|\bне\b|\bни\b|\bнет\b|不|没|\bδεν\b|\bμη\b|\bلا\b|\bلم\b|\bليس\b|नहीं|\bमत\b",
    re.IGNORECASE,
)
_OTHER_PERSON = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:\w+\s+)?(?:colleague|co-?worker|partner|boss|manager|lead|cto|ceo|"
    r"brother|sister|mother|father|mum|mom|dad|wife|husband|girlfriend|boyfriend|friend|neighbou?r|teammate|"
    r"co-?host|apprentice|supervisor|pianist|client|customer|son|daughter|director|principal|nephew|niece)s?\b"
    r"|\bthe client's\b|коллег|老板|同事|διευθυντ|زميل|लीड",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|hypothetically|suppose|supposing|imagine|in case|were to|wondering|whether)\b", re.IGNORECASE
)
_TEMPORARY = re.compile(
    r"\b(?:this (?:week|month|morning|afternoon|evening|sprint)|today|tonight|right now|at the moment|"
    r"for now|for the moment|temporarily|while mine)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:no,? wait|wait,? no|hmm,? no|hm,? no|actually|scratch that|i mean|outdated|that was before|"
    r"other way round|not anymore|no longer|i switched|we switched|i moved|we moved|migrated|we bumped|"
    r"raised it|dropped|upgraded|behind the times|out of habit)\b",
    re.IGNORECASE,
)
_RETRACTION = re.compile(
    r"\b(?:dropped|no longer|not anymore|stopped using|gave up|retired|switched from|moved from|"
    r"migrated from|replaced|upgraded from)\b",
    re.IGNORECASE,
)
"""A cue before a value that takes it back ("we dropped Intel"), as opposed to one that
brings the new value ("we moved to Node 22")."""
_KEEPS_MODALITY = re.compile(
    r"\b(?:if|might|may|would|could|consider\w*|hypothetic\w*|possibl\w*|maybe|future|plans?|asked|asks)\b",
    re.IGNORECASE,
)
_KEEPS_TIME = re.compile(
    r"\b(?:this|today|tonight|now|currently|temporar\w*|for now|at the moment|week|month|until|while)\b",
    re.IGNORECASE,
)
_KEEPS_HISTORY = re.compile(
    r"\b(?:no longer|previously|formerly|used to|moved|switched|migrated|upgraded|bumped|dropped|raised|"
    r"from|instead|replaced|was|were)\b",
    re.IGNORECASE,
)
_FOLLOWING = 1
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？:]\s*|\n\s*|[\"'‘“(]\s*)$")
"""What comes before a word that opens a sentence (whose capital letter names nothing)."""
_NEGATION_REACH = 4
"""Words before a term a negation reaches over ("I do not use Excel")."""
_NEGATION_CHARS = 28
"""Sentences after a term in which a correction still takes it back."""


@dataclass(frozen=True, slots=True)
class Said:
    """What a fact may rest on: the user's own words (and tools'), in the order said."""

    text: str

    @property
    def sentences(self) -> list[str]:
        return [s.strip() for s in _SENTENCE.split(self.text) if s and s.strip()]


def _bounded(word: str) -> str:
    """`word` as a whole word; a Latin word glued to Chinese ("用Sketch") still stands alone."""
    edge = "[a-z0-9_]" if word.isascii() else r"\w"
    return rf"(?<!{edge}){re.escape(word)}(?!{edge})"


def _terms(candidate: str, said: str) -> list[str]:
    """The candidate's words that name something: numbers and versions, and words the user
    wrote with a capital letter inside a sentence (tools, places, people: not "Everything"
    opening a sentence, not "I'm")."""
    out: list[str] = []
    for word in dict.fromkeys(content_words(candidate)):
        if not word.isascii() or word.startswith("i'"):
            continue
        named = (
            m.group(0) != m.group(0).lower() and not _SENTENCE_START.search(said[: m.start()])
            for m in re.finditer(_bounded(word), said, re.IGNORECASE)
        )
        if any(c.isdigit() for c in word) or any(named):
            out.append(word)
    return out


def _at(text: str, word: str) -> int:
    """Where `word` (or its stem) starts in `text`, or -1."""
    low = text.lower()
    exact = re.search(_bounded(word), low)
    if exact is not None:
        return exact.start()
    if any(c.isdigit() for c in word):
        return -1
    if stem(word) in {stem(t) for t in tokens(text)}:
        return max(low.find(stem(word)), 0)
    return -1


def _clauses(sentence: str) -> list[str]:
    return [c for c in _CLAUSE.split(sentence) if c.strip()]


def _negated(clause: str, at: int) -> bool:
    """A negation just before the word (its last few words; a few characters in scripts
    without spaces): "never 9.81", "don't suggest VS Code", "不用Sketch"."""
    before = " ".join(clause[:at].split()[-_NEGATION_REACH:])[-_NEGATION_CHARS:]
    return _NEGATION.search(before) is not None


@dataclass(frozen=True, slots=True)
class _Mention:
    sentence: int
    sentence_text: str
    clause: str
    at: int


def _mentions(sentences: Sequence[str], word: str) -> list[_Mention]:
    out: list[_Mention] = []
    for n, sentence in enumerate(sentences):
        for clause in _clauses(sentence):
            at = _at(clause, word)
            if at >= 0:
                out.append(_Mention(n, sentence, clause, at))
    return out


def _entry_clause(candidate: str, word: str) -> tuple[str, int]:
    for clause in _clauses(candidate):
        at = _at(clause, word)
        if at >= 0:
            return clause, at
    return candidate, max(_at(candidate, word), 0)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "…"


def _corrected(sentences: Sequence[str], mentions: Sequence[_Mention], word: str) -> str | None:
    """The correction that takes back every mention of `word`, or None. A mention in a clause
    that itself takes it back ("we dropped Intel") does not say it again."""
    kept = [m for m in mentions if not _RETRACTION.search(m.clause[: m.at])]
    if not kept:
        return mentions[0].sentence_text
    last = max(m.sentence for m in kept)
    for n in range(last, min(last + _FOLLOWING + 1, len(sentences))):
        text = sentences[n]
        cue = _CORRECTION.search(text)
        if cue is None or (n == last and cue.start() < _at(text, word)):
            continue
        if not any(m.sentence > n for m in kept):
            return text
    return None


def _names(clause: str, word: str) -> list[str]:
    """The capitalised words of a clause (who it is about), `word` and function words aside."""
    found = (n.lower() for n in re.findall(r"(?<!\w)[A-Z][\w'-]+", clause))
    return [n for n in found if n != word and n not in STOPWORDS]


def _mention_problem(m: _Mention, candidate: str, word: str, mine: bool) -> str | None:
    """Why this mention does not support the candidate as a plain fact about the user."""
    said = _quote(m.clause)
    low = candidate.lower()
    if _negated(m.clause, m.at) != mine:
        what = "denied" if not mine else "said"
        return f"the opposite of what the user said ({what}: {said!r}); keep the user's meaning"
    person = _OTHER_PERSON.search(m.clause)
    if person is not None and not any(
        n in low for n in [person.group(0).split()[-1].lower(), *_names(m.clause, word)]
    ):
        return f"about someone else, not the user ({said!r}); say whose it is or leave it out"
    if _HYPOTHETICAL.search(m.clause) and not _KEEPS_MODALITY.search(candidate):
        return f"hypothetical: the user said {said!r}; not a fact about them"
    if m.clause.rstrip().endswith(("?", "？")) and not _KEEPS_MODALITY.search(candidate):
        return f"a question the user asked ({said!r}), not a fact"
    if _TEMPORARY.search(m.clause) and not _KEEPS_TIME.search(candidate):
        return f"temporary: the user said {said!r}; not a durable fact"
    return None


def _judge(candidate: str, said: Said, word: str) -> str | None:
    sentences = said.sentences
    mentions = _mentions(sentences, word)
    if not mentions:
        return None
    clause, at = _entry_clause(candidate, word)
    mine = _negated(clause, at)
    problems = [_mention_problem(m, candidate, word, mine) for m in mentions]
    if all(problems):
        return problems[0]
    correction = None if _KEEPS_HISTORY.search(candidate) else _corrected(sentences, mentions, word)
    if correction is not None:
        return f"corrected: the user took it back ({_quote(correction)!r}); save only the latest value"
    return None


def _best_support(candidate: str, said: Said) -> list[_Mention]:
    """The clauses holding most of the candidate's content words (half of them at least)."""
    stems = {stem(w) for w in content_words(candidate)}
    if not stems:
        return []
    scored: list[tuple[int, _Mention]] = []
    for n, sentence in enumerate(said.sentences):
        for clause in _clauses(sentence):
            shared = len(stems & {stem(t) for t in content_words(clause)})
            if shared * 2 >= len(stems):
                scored.append((shared, _Mention(n, sentence, clause, 0)))
    best = max((s for s, _ in scored), default=0)
    return [m for s, m in scored if s == best]


def _modality(candidate: str, said: Said) -> str | None:
    """The candidate states as a plain fact what the user only said as a hypothesis or for now."""
    support = _best_support(candidate, said)
    if not support:
        return None
    if all(_HYPOTHETICAL.search(m.clause) for m in support) and not _KEEPS_MODALITY.search(candidate):
        return f"hypothetical: the user said {_quote(support[0].clause)!r}; not a fact about them"
    if all(_TEMPORARY.search(m.clause) for m in support) and not _KEEPS_TIME.search(candidate):
        return f"temporary: the user said {_quote(support[0].clause)!r}; not a durable fact"
    return None


def meaning_problem(candidate: str, said: Said) -> str | None:
    """Why `candidate` does not mean what the user said (see the module), or None."""
    modality = _modality(candidate, said)
    if modality is not None:
        return modality
    for word in _terms(candidate, said.text):
        problem = _judge(candidate, said, word)
        if problem is not None:
            return problem
    return None
