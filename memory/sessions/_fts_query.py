"""Turn free text from a model or a user into FTS5 queries that SQLite always accepts.

FTS5 has its own query language: bare words may only hold ASCII letters, digits, `_` and
non-ASCII characters; `"` opens a phrase, `*` asks for a prefix, `:` `^` `+` `-` `{}` `()`
are column filters and grouping, and AND/OR/NOT are binary operators. Anything else is a
syntax error, and `a-b` even means "column b" — so a model that searches for `chat-send`
would get an exception, not results. Every function here is pure: no SQLite, no I/O.

PostgreSQL's `websearch_to_tsquery` never raises, but reads `-word` as NOT and `or` as
OR; `websearch_query` renders the same parse in its syntax so both stores read a query
alike.

Two renderings of one query:
- `sanitize_fts_query` keeps what the user wrote (implicit AND, their OR/NOT, phrases and
  `prefix*`), only making it legal;
- `extract_terms` + `any_terms_query` build the recall-oriented form: an OR of the
  meaningful (non-stopword) terms, for BM25 to rank.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from memory._words import SEARCH_STOPWORDS

__all__ = [
    "MAX_QUERY_CHARS",
    "any_terms_query",
    "extract_terms",
    "has_cjk",
    "quote_term",
    "sanitize_fts_query",
    "websearch_any_query",
    "websearch_query",
]

MAX_QUERY_CHARS = 2048
"""Queries are cut to this many characters before anything else happens."""

_MAX_TERMS = 24
"""An OR of more terms than this costs more than it adds to recall."""

# FTS5 query syntax characters plus other punctuation that has no place in a bare word.
# `.`, `-` and `_` stay inside words, which are then quoted whole (`my-app.config.ts`).
_SPECIAL = re.compile(r"""[+{}():"^@/#&|~\[\]<>,;!?$=\\'%`]""")
_OPERATORS = frozenset({"AND", "OR", "NOT"})
_KEYWORDS = _OPERATORS | {"NEAR"}


@dataclass(frozen=True, slots=True)
class _Item:
    kind: Literal["word", "phrase", "op"]
    text: str
    prefix: bool = False


def quote_term(term: str) -> str:
    """`term` as an FTS5 string: one phrase, matched token by token."""
    return '"' + term.replace('"', '""') + '"'


def has_cjk(text: str) -> bool:
    """True when `text` holds a CJK ideograph, kana or hangul (unicode61 cannot split those)."""
    return any(_is_cjk(ch) for ch in text)


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x3040 <= cp <= 0x30FF  # hiragana, katakana
        or 0x3400 <= cp <= 0x4DBF  # CJK extension A
        or 0x4E00 <= cp <= 0x9FFF  # CJK unified ideographs
        or 0xAC00 <= cp <= 0xD7AF  # hangul syllables
        or 0xF900 <= cp <= 0xFAFF  # compatibility ideographs
        or 0x20000 <= cp <= 0x2FA1F  # extensions B–F and supplements
    )


def _clean(raw: str) -> str:
    # Lone surrogates cannot be encoded for SQLite; control characters (NUL included) end
    # or break FTS5 tokens. Both become spaces, as does every other Unicode "Other" char.
    out = []
    for ch in raw[:MAX_QUERY_CHARS]:
        cat = unicodedata.category(ch)
        out.append(" " if cat in ("Cc", "Cs", "Co", "Cn") else ch)
    return "".join(out)


def _has_word_char(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _needs_quotes(word: str) -> bool:
    # Bare FTS5 words allow ASCII letters/digits and any non-ASCII character. `_` is legal
    # too, but the tokenizer splits on it, so underscored names are quoted like dotted ones.
    # Keywords used as words (`AND*`, `NEAR`) are quoted: bare, they are syntax.
    return word in _KEYWORDS or any(ord(ch) < 128 and not ch.isalnum() for ch in word)


def _split_phrases(text: str) -> list[tuple[bool, str]]:
    """Split into (is_phrase, text) parts; an unbalanced trailing quote becomes a space."""
    parts: list[tuple[bool, str]] = []
    pos = 0
    for match in re.finditer(r'"([^"]*)"', text):
        parts.append((False, text[pos : match.start()]))
        parts.append((True, match.group(1)))
        pos = match.end()
    parts.append((False, text[pos:].replace('"', " ")))
    return parts


def _words(chunk: str) -> list[_Item]:
    items: list[_Item] = []
    for token in _SPECIAL.sub(" ", chunk).split():
        pieces = token.split("*")
        # `a*b` is two words; only a star at the very end asks for a prefix, and a
        # leading star (nothing to extend) is dropped.
        for i, piece in enumerate(pieces):
            if not piece:
                continue
            is_last = i == len(pieces) - 1 or all(not p for p in pieces[i + 1 :])
            prefix = is_last and token.endswith("*")
            if piece in _OPERATORS and not prefix:
                items.append(_Item("op", piece))
            elif _has_word_char(piece):
                items.append(_Item("word", piece, prefix))
    return items


def _items(raw: str) -> list[_Item]:
    items: list[_Item] = []
    for is_phrase, text in _split_phrases(_clean(raw)):
        if is_phrase:
            phrase = " ".join(text.split())
            if _has_word_char(phrase):
                items.append(_Item("phrase", phrase))
        else:
            items.extend(_words(text))
    return items


def _fix_operators(items: list[_Item]) -> list[_Item]:
    # Operators are binary: drop them at either end, and of a run like `OR NOT` keep the
    # last one (FTS5 has no unary NOT; `a OR NOT b` is a syntax error).
    fixed: list[_Item] = []
    pending: _Item | None = None
    for item in items:
        if item.kind == "op":
            pending = item if fixed else None
            continue
        if pending is not None:
            fixed.append(pending)
            pending = None
        fixed.append(item)
    return fixed


def _render(item: _Item) -> str:
    if item.kind == "op":
        return item.text
    if item.kind == "phrase" or _needs_quotes(item.text):
        rendered = quote_term(item.text)
    else:
        rendered = item.text
    return rendered + "*" if item.prefix else rendered


def sanitize_fts_query(raw: str) -> str | None:
    """Make `raw` a legal FTS5 query that still means what its author wrote.

    Cuts to 2,048 characters; keeps balanced `"quoted phrases"` (an unbalanced quote
    becomes a space); replaces FTS5 syntax characters with spaces; quotes dotted,
    hyphenated and underscored terms (`chat-send`, `P2.2`, `my_var`); keeps `prefix*`
    but drops a leading `*`; keeps AND/OR/NOT between terms and drops them where they
    dangle. Terms are joined by FTS5's implicit AND.

    Returns:
        The query, or None when nothing searchable is left.
    """
    rendered = [_render(item) for item in _fix_operators(_items(raw))]
    return " ".join(rendered) or None


def extract_terms(raw: str) -> list[str]:
    """The meaningful terms of `raw`, lower-cased, de-duplicated, in order.

    Phrases stay whole; operators, stopwords and one-letter words (other than digits and
    CJK) are dropped; at most 24 terms are kept. Prefix stars are not carried over.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for item in _items(raw):
        if item.kind == "op":
            continue
        term = item.text.lower()
        if item.kind == "word" and (
            term in SEARCH_STOPWORDS or (len(term) == 1 and not term.isdigit() and not has_cjk(term))
        ):
            continue
        if term not in seen:
            seen.add(term)
            terms.append(term)
    return terms[:_MAX_TERMS]


def any_terms_query(terms: list[str]) -> str | None:
    """An FTS5 OR of `terms`, each quoted (so it is always legal); None for no terms."""
    return " OR ".join(quote_term(t) for t in terms) or None


def _websearch_item(item: _Item, fold: Callable[[str], str] | None) -> str:
    # Quoted text is a phrase to websearch_to_tsquery; a quote inside cannot occur (the
    # parse splits on quotes). Words holding punctuation (`-x`, `a.b`) and words that
    # websearch reads as syntax (`or`) are quoted so they stay words.
    text = item.text if fold is None else " ".join(fold(item.text).split())
    if fold is not None or item.kind == "phrase" or _needs_quotes(text) or text.lower() == "or":
        return f'"{text}"'
    return text


def websearch_query(raw: str, *, fold: Callable[[str], str] | None = None) -> str | None:
    """`raw` as PostgreSQL `websearch_to_tsquery` input that means what `sanitize_fts_query` does.

    Implicit AND, `OR`, `NOT b` (as `-b`) and phrases carry over; a prefix star cannot be
    expressed there and is dropped (stemming still matches most inflections). `fold`
    rewrites each word and phrase as the index saw its text (each becomes a phrase).

    Returns:
        The text, or None when nothing searchable is left.
    """
    out: list[str] = []
    negate = False
    for item in _fix_operators(_items(raw)):
        if item.kind == "op":
            if item.text == "OR":
                out.append("or")
            negate = item.text == "NOT"
            continue
        out.append(("-" if negate else "") + _websearch_item(item, fold))
        negate = False
    return " ".join(out) or None


def websearch_any_query(terms: list[str], *, fold: Callable[[str], str] | None = None) -> str | None:
    """An OR of `terms` (each one phrase) as `websearch_to_tsquery` input; None for no terms."""
    shown = [" ".join((t if fold is None else fold(t)).split()) for t in terms]
    return " or ".join(f'"{t}"' for t in shown if t) or None
