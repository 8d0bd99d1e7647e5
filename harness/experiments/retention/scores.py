"""Scores of the retention eval, model-free: LoCoMo's answer F1 and *answer retained*.

Normalization follows LoCoMo's own evaluation (`task_eval/evaluation.py` of the dataset's
repository): drop commas, lower-case, strip punctuation, drop the words `a an the and`,
collapse whitespace, then Porter-stem every token (the original Porter algorithm from
`snowballstemmer`; LoCoMo uses NLTK's variant, which differs on a few rare suffixes).

- `answer_f1`: the category rules of LoCoMo's scorer — token F1 of the stemmed answer for
  categories 2–4 (category 3's gold cut at its first `;`), the mean over comma-separated gold
  parts of the best-matching predicted part for category 1, and for category 5 (adversarial:
  the conversation never says) 1 when the answer says "not mentioned" or "no information
  available", else 0.
- `retained`: token recall of the gold answer in what the model can still see after
  compression, per source (curated memory, the summary message, the kept messages), so a
  report can say where each answer survived. No model is asked anything.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

import snowballstemmer

__all__ = [
    "ADVERSARIAL",
    "RETENTION_SOURCES",
    "Retention",
    "RetentionSource",
    "answer_f1",
    "answer_tokens",
    "normalize_answer",
    "retained",
    "token_f1",
]

ADVERSARIAL = 5
"""LoCoMo's category of questions the conversation does not answer."""
RetentionSource = Literal["memory", "summary", "tail"]
RETENTION_SOURCES: tuple[RetentionSource, ...] = ("memory", "summary", "tail")
"""Where an answer can survive a compression: MEMORY.md/USER.md, the summary, kept messages."""

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_NOT_ANSWERED = ("not mentioned", "no information available")


class _Stemmer(Protocol):
    def stemWords(self, words: list[str]) -> list[str]: ...


@functools.cache
def _stemmer() -> _Stemmer:
    stemmer: _Stemmer = snowballstemmer.stemmer("porter")
    return stemmer


def normalize_answer(text: str) -> str:
    """LoCoMo's normalization (before stemming)."""
    text = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    """Normalized, Porter-stemmed tokens."""
    words = normalize_answer(text).split()
    return _stemmer().stemWords(words)


def token_f1(prediction: str, gold: str) -> float:
    """Stemmed token F1 of one prediction against one gold answer."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def _multi_f1(prediction: str, gold: str) -> float:
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def answer_f1(prediction: str, gold: str, category: int) -> float:
    """LoCoMo's score of one answer, by the question's category."""
    if category == ADVERSARIAL:
        lowered = prediction.lower()
        return 1.0 if any(p in lowered for p in _NOT_ANSWERED) else 0.0
    if category == 1:
        return _multi_f1(prediction, gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


@dataclass(frozen=True, slots=True)
class Retention:
    """How much of one gold answer is still visible, in all and per source."""

    recall: float
    """Share of the gold answer's tokens found anywhere the model can see (0–1)."""
    by_source: dict[RetentionSource, float]

    @property
    def where(self) -> tuple[RetentionSource, ...]:
        """The sources that hold the whole answer; else the best partial one; else nothing."""
        whole = tuple(s for s in RETENTION_SOURCES if self.by_source.get(s, 0.0) >= 1.0)
        if whole:
            return whole
        best = max(RETENTION_SOURCES, key=lambda s: self.by_source.get(s, 0.0))
        return (best,) if self.by_source.get(best, 0.0) > 0 else ()


def _recall(gold: list[str], visible: set[str]) -> float:
    return sum(t in visible for t in gold) / len(gold) if gold else 0.0


def retained(gold: str, sources: Mapping[RetentionSource, str]) -> Retention:
    """Token recall of `gold` in each source's text and in all of them together."""
    ref = answer_tokens(gold)
    seen = {s: set(answer_tokens(sources.get(s, ""))) for s in RETENTION_SOURCES}
    union = set().union(*seen.values())
    return Retention(_recall(ref, union), {s: _recall(ref, seen[s]) for s in RETENTION_SOURCES})
