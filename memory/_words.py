"""The English words that carry no topic, shared by everything in `memory` that weighs words.

Session search, the providers' fact search and the grounding check all drop these before
they compare or search; one list means a word is "content" to all three alike.

`STOPWORDS` are whole words: function words, the question words and auxiliaries that
questions are made of ("when did", "what would"), and a few connectives ("via", "per").
`APOSTROPHE_PIECES` are what a tokenizer that splits at apostrophes leaves of a
contraction ("didn't" → `didn` + `t`, "we'll" → `we` + `ll`): FTS5's `unicode61` and the
query parsers built to match it split there, so their term lists drop these too. The
grounding check keeps "didn't" whole, and must not drop `won` or `don` as words.
"""

from __future__ import annotations

__all__ = ["APOSTROPHE_PIECES", "SEARCH_STOPWORDS", "STOPWORDS"]

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can cannot could did do does doing down during each ever
    few for from further get got had has have having he her here hers herself him himself his
    how i if in into is it its itself just let lets may me might more most must my myself no nor
    not now of off on once only or other ought our ours ourselves out over own per same shall
    she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up upon us very via was we were what when where which
    while who whom whose why will with would yes yet you your yours yourself yourselves
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
"""Whole words that carry no topic."""

_PIECES_TEXT = (
    "aren couldn didn doesn don hadn hasn haven isn mustn shouldn wasn weren won wouldn ll re ve s t d m"
)
APOSTROPHE_PIECES: frozenset[str] = frozenset(_PIECES_TEXT.split())
"""The pieces of contractions split at the apostrophe."""

SEARCH_STOPWORDS: frozenset[str] = STOPWORDS | APOSTROPHE_PIECES
"""What a search that splits words at apostrophes drops (session search, the providers' FTS terms)."""
