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
- is sarcasm ("Oh great, poison, exactly what my plot needs. No thanks."), or
- was corrected within the next sentences ("no wait", "actually", "that's outdated", "we
  moved to …") or taken back later ("I dropped SketchUp"), and the new value is what the
  user meant.

Whom a clause is about, and whether it is sarcasm, is `_voice`'s to say.

The candidate's *plain* words (lower-case, not verbs: "npm", "dahlias", "vegan", "ifort") are
judged too, more narrowly — only where it states them plainly, and only for a denial close
before them, someone else's clause, sarcasm or a later retraction — since a plain word is
more often said in passing than a name.

Each check errs towards keeping: a term the user said both ways, or in another clause
plainly, is not judged. The reasons name what the user said, so they can be acted on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory._words import STOPWORDS
from memory.grounding._tokens import content_words, stem, tokens
from memory.grounding._voice import ironic, subjects

__all__ = ["Said", "meaning_problem"]

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")
_CLAUSE = re.compile(r"[,;:—–，；]|\s(?:but|though|although|whereas|while)\s", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:not|never|no|nothing|none|neither|nor|without|hates?|dislikes?|avoids?|refuses?|stopped|quit|instead of|rather than"
    r"|can't stand|no longer)\b|n't\b|\bне\b|\bни\b|\bнет\b|不|没|\bδεν\b|\bμη\b|\bو?لا\b|\bو?لم\b|\bو?ليس\b|नहीं|\bमत\b",
    re.IGNORECASE,
)
_NEGATION_AFTER = re.compile(r"\S+(?:\s+\S+){0,2}?\s+(?:नहीं|मत)(?!\S)")
"""Hindi puts its negation after the object and the verb: "हम Flask नहीं इस्तेमाल करते"."""
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
_PLAIN_REACH = 3
_VERBS = frozenset(
    stem(w)
    for w in [
        "use",
        "run",
        "work",
        "prefer",
        "like",
        "love",
        "want",
        "need",
        "make",
        "write",
        "keep",
        "have",
        "go",
        "get",
        "edit",
        "build",
        "deploy",
        "code",
        "read",
        "say",
        "tell",
        "put",
        "give",
        "take",
        "call",
        "suggest",
        "touch",
        "stand",
        "eat",
        "drink",
        "change",
        "move",
        "know",
        "think",
        "see",
        "look",
        "try",
        "ask",
        "start",
        "stop",
        "set",
        "send",
        "live",
        "find",
        "learn",
        "teach",
        "help",
    ]
)
"""What a user does (stems): in "I do not use Excel" the verb is not what they denied."""
"""Words before a plain (lower-case) word a negation reaches over: "never apt or brew"."""
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
    without spaces): "never 9.81", "don't suggest VS Code", "不用Sketch", "ولا أستخدم SPSS" —
    or, in Hindi, just after it."""
    before = " ".join(clause[:at].split()[-_NEGATION_REACH:])[-_NEGATION_CHARS:]
    return _NEGATION.search(before) is not None or _NEGATION_AFTER.match(clause[at:]) is not None


@dataclass(frozen=True, slots=True)
class _Mention:
    sentence: int
    sentence_text: str
    clause: str
    at: int
    other: str | None = None
    """Who else the clause is about ("neighbour clive", "mikkel"), when it is not the user."""
    ironic: bool = False


def _mentions(sentences: Sequence[str], word: str) -> list[_Mention]:
    out: list[_Mention] = []
    for n, sentence in enumerate(sentences):
        sarcastic = ironic(sentences, n)
        for clause, other in subjects(_clauses(sentence), word):
            at = _at(clause, word)
            if at >= 0:
                out.append(_Mention(n, sentence, clause, at, other, sarcastic))
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


def _retracts(m: _Mention) -> bool:
    """The mention itself takes the word back: "we dropped Intel", "switched from Trados"."""
    return _RETRACTION.search(" ".join(m.clause[: m.at].split()[-_PLAIN_REACH:])) is not None


def _retracted(mentions: Sequence[_Mention]) -> str | None:
    """The sentence that takes `mentions` back: every one of them retracts it ("we dropped
    Intel"), or a later one does ("I'll draw it in SketchUp." … "I dropped SketchUp when …")."""
    kept = [m for m in mentions if not _retracts(m)]
    if not mentions or not kept:
        return mentions[0].sentence_text if mentions else None
    later = [m for m in mentions if m not in kept and m.sentence > max(k.sentence for k in kept)]
    return later[-1].sentence_text if later else None


def _corrected(sentences: Sequence[str], mentions: Sequence[_Mention], word: str) -> str | None:
    """The correction that takes back every mention of `word`, or None. A mention in a clause
    that itself takes it back ("we dropped Intel") does not say it again."""
    retraction = _retracted(mentions)
    if retraction is not None:
        return retraction
    kept = [m for m in mentions if not _retracts(m)]
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


def _someone_else(m: _Mention, candidate: str, word: str) -> bool:
    """The mention is about someone else, and the candidate does not say whom."""
    low = candidate.lower()
    return m.other is not None and not any(n in low for n in [*m.other.split(), *_names(m.clause, word)])


def _mention_problem(m: _Mention, candidate: str, word: str, mine: bool) -> str | None:
    """Why this mention does not support the candidate as a plain fact about the user."""
    said = _quote(m.clause)
    if _negated(m.clause, m.at) != mine:
        what = "denied" if not mine else "said"
        return f"the opposite of what the user said ({what}: {said!r}); keep the user's meaning"
    if _someone_else(m, candidate, word):
        return f"about someone else, not the user ({said!r}); say whose it is or leave it out"
    if m.ironic:
        return f"sarcasm: the user meant the opposite of {_quote(m.sentence_text)!r}"
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
    # a correction takes back what the user said of themself; someone else's mention is
    # not the user saying it again
    own = [m for m, p in zip(mentions, problems, strict=True) if p is None]
    correction = None if _KEEPS_HISTORY.search(candidate) else _corrected(sentences, own, word)
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
    if all(ironic(said.sentences, m.sentence) for m in support):
        return f"sarcasm: the user meant the opposite of {_quote(support[0].sentence_text)!r}"
    if all(_HYPOTHETICAL.search(m.clause) for m in support) and not _KEEPS_MODALITY.search(candidate):
        return f"hypothetical: the user said {_quote(support[0].clause)!r}; not a fact about them"
    if all(_TEMPORARY.search(m.clause) for m in support) and not _KEEPS_TIME.search(candidate):
        return f"temporary: the user said {_quote(support[0].clause)!r}; not a durable fact"
    return None


def _plain_words(candidate: str, terms: Sequence[str]) -> list[str]:
    """The candidate's other words worth judging: lower-case names of things ("npm",
    "dahlias", "vegan"), not numbers and not words of one or two letters."""
    return [
        w
        for w in dict.fromkeys(content_words(candidate))
        if w.isascii()
        and len(w) >= 3
        and w not in terms
        and not w.startswith("i'")
        and not any(c.isdigit() for c in w)
        and stem(w) not in _VERBS
    ]


def _plain_problem(m: _Mention, candidate: str, word: str) -> str | None:
    """A plain word's mention is judged for what is plain in it: denied, someone else's, sarcasm."""
    said = _quote(m.clause)
    before = " ".join(m.clause[: m.at].split()[-_PLAIN_REACH:])
    if _NEGATION.search(before) is not None:
        return f"the opposite of what the user said (denied: {said!r}); keep the user's meaning"
    if _someone_else(m, candidate, word):
        return f"about someone else, not the user ({said!r}); say whose it is or leave it out"
    if m.ironic:
        return f"sarcasm: the user meant the opposite of {_quote(m.sentence_text)!r}"
    return None


def _judge_plain(candidate: str, said: Said, word: str) -> str | None:
    """A lower-case word the candidate states plainly: refused when every mention of it was
    denied, someone else's or sarcastic, or when the user took it back. A candidate that
    itself denies or contrasts the word ("pnpm, not npm") is not judged on it."""
    clause, at = _entry_clause(candidate, word)
    if _negated(clause, at) or re.search(r"\b(?:over|versus|vs|except|unlike)\b", clause[:at], re.I):
        return None
    mentions = _mentions(said.sentences, word)
    if not mentions:
        return None
    problems = [_plain_problem(m, candidate, word) for m in mentions]
    if all(problems):
        return problems[0]
    own = [m for m, p in zip(mentions, problems, strict=True) if p is None]
    retraction = None if _KEEPS_HISTORY.search(candidate) else _retracted(own)
    if retraction is not None:
        return f"corrected: the user took it back ({_quote(retraction)!r}); save only the latest value"
    return None


def meaning_problem(candidate: str, said: Said) -> str | None:
    """Why `candidate` does not mean what the user said (see the module), or None."""
    modality = _modality(candidate, said)
    if modality is not None:
        return modality
    terms = _terms(candidate, said.text)
    for word in terms:
        problem = _judge(candidate, said, word)
        if problem is not None:
            return problem
    for word in _plain_words(candidate, terms):
        problem = _judge_plain(candidate, said, word)
        if problem is not None:
            return problem
    return None
