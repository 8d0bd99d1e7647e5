"""Tokenizing text for the providers' fact stores: words, Jaccard tokens, FTS5 query terms.

One definition of a "word" is shared by the holographic HRR encoding, its Jaccard overlap
and the semantic provider's keyword search and extraction, so every signal sees the same
vocabulary. CJK scripts have no spaces between words, so CJK
runs become character bigrams for the overlap and substring (LIKE) terms for the search.
"""

from __future__ import annotations

import re
import string

from memory._words import SEARCH_STOPWORDS

__all__ = ["cjk_like_terms", "fts_terms", "jaccard", "jaccard_tokens", "words"]

_STRIP = string.punctuation + "“”‘’«»‹›…—–·•¡¿"
_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def words(text: str) -> list[str]:
    """Lower-cased whitespace tokens with surrounding punctuation stripped; empties dropped."""
    out: list[str] = []
    for raw in text.lower().split():
        token = raw.strip(_STRIP)
        if token:
            out.append(token)
    return out


def _bigrams(run: str) -> list[str]:
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def jaccard_tokens(text: str) -> set[str]:
    """The token set for Jaccard overlap: `words`, with CJK runs as character bigrams."""
    tokens: set[str] = set()
    for word in words(text):
        runs = _CJK_RUN.findall(word)
        if not runs:
            tokens.add(word)
            continue
        for run in runs:
            tokens.update(_bigrams(run))
        rest = _CJK_RUN.sub(" ", word).split()
        tokens.update(t.strip(_STRIP) for t in rest if t.strip(_STRIP))
    return tokens


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|, 0 when both are empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def fts_terms(query: str) -> list[str]:
    """Search terms for FTS5: word tokens minus stopwords (`memory._words`) and 1-character tokens, no CJK.

    The caller OR-joins them: FTS5's implicit AND drops every fact that lacks one query
    word, which on prose questions drops nearly everything.
    """
    seen: dict[str, None] = {}
    for token in _WORD.findall(query.lower()):
        if len(token) < 2 or token in SEARCH_STOPWORDS or _CJK_RUN.search(token):
            continue
        seen.setdefault(token, None)
    return list(seen)


def cjk_like_terms(query: str) -> list[str]:
    """Substring terms for CJK text (which FTS5's default tokenizer cannot split).

    Runs of 2–3 characters are used whole; longer runs become overlapping 3-character
    shingles. Single characters are too unselective to search for.
    """
    seen: dict[str, None] = {}
    for run in _CJK_RUN.findall(query):
        if len(run) < 2:
            continue
        if len(run) <= 3:
            seen.setdefault(run, None)
            continue
        for i in range(len(run) - 2):
            seen.setdefault(run[i : i + 3], None)
    return list(seen)
