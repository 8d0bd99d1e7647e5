"""Normalization before matching: invisible characters out, look-alikes folded, separators joined.

The scanner never matches the raw text. `views(text)` builds the texts the rules run on:

    lowered   NFKC, every default-ignorable code point removed, casefolded. Rules for
              languages with their own scripts (Russian, Chinese, Japanese, ...) run here.
    folded    `lowered` with every non-ASCII letter that is a confusable look-alike of an
              ASCII letter or digit replaced by it (Cyrillic о/с/і, Greek ι, ...): the
              Unicode confusables skeleton restricted to ASCII targets. English rules run here.
    joined    `folded` with separators inside words removed (`I.g.n.o.r.e`, `ig-nore`,
              `in_struc_tions`) and runs of spaced single letters glued (`i g n o r e`).
    compact   `folded` with everything but a-z removed (`ignoreallpreviousinstructions`).
    leet      `folded` with digits and symbols that stand for letters read as those letters,
              inside words that mix the two (`1gn0r3 4ll pr3v10u5` → `ignore all previous`);
              words of digits alone (`2024`, `8443`) are left as they are.

The confusable data is the Unicode `confusables.txt` as shipped by the `confusable-homoglyphs`
package (MIT; a JSON data file read offline, loaded once on first use). Default-ignorable
code points are the Unicode `Default_Ignorable_Code_Point` property (17 ranges, checked
against the `regex` module's property tables by a test).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "DEFAULT_IGNORABLE_RANGES",
    "TAG_RANGE",
    "Views",
    "allowed_in_emoji",
    "ignorable_positions",
    "is_default_ignorable",
    "views",
]

DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian variation selectors, vowel separator
    (0x200B, 0x200F),  # zero-width space/joiners, LRM/RLM
    (0x202A, 0x202E),  # bidirectional embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, isolates, deprecated formats
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors 1-16
    (0xFEFF, 0xFEFF),  # zero-width no-break space / BOM
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # unassigned specials
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE0FFF),  # tags (E0000-E007F) and variation selectors 17-256
)
"""Unicode's Default_Ignorable_Code_Point property: invisible to people, visible to models."""

TAG_RANGE = (0xE0000, 0xE007F)

_IGNORABLE_CLASS = "".join(
    re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
    for lo, hi in DEFAULT_IGNORABLE_RANGES
)
_IGNORABLE = re.compile(f"[{_IGNORABLE_CLASS}]")
_VS_EMOJI = frozenset({0xFE0E, 0xFE0F})
_ZWJ = 0x200D


def is_default_ignorable(cp: int) -> bool:
    """Whether code point `cp` is default-ignorable."""
    return any(lo <= cp <= hi for lo, hi in DEFAULT_IGNORABLE_RANGES)


def _is_symbol(char: str) -> bool:
    return unicodedata.category(char) in {"So", "Sk"} or 0x1F000 <= ord(char) <= 0x1FAFF


def allowed_in_emoji(text: str, index: int) -> bool:
    """An emoji presentation selector or joiner in its only legitimate place.

    VS15/VS16 (U+FE0E/U+FE0F) directly after a symbol ("☕️"), and a zero-width joiner
    between two symbols or a symbol and a selector (family and profession emoji). These
    cannot hide letters: a selector after a letter, a run of them, or a joiner between
    letters is still reported.
    """
    cp = ord(text[index])
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if cp in _VS_EMOJI:
        return bool(before) and _is_symbol(before)
    if cp == _ZWJ:
        left_ok = bool(before) and (
            _is_symbol(before) or ord(before) in _VS_EMOJI or 0x1F3FB <= ord(before) <= 0x1F3FF
        )
        return left_ok and bool(after) and _is_symbol(after)
    return False


def ignorable_positions(text: str) -> list[int]:
    """Indexes of the default-ignorable code points in `text` that are not emoji parts."""
    return [m.start() for m in _IGNORABLE.finditer(text) if not allowed_in_emoji(text, m.start())]


@functools.cache
def _skeleton_table() -> dict[int, str]:
    """Non-ASCII code point → the ASCII letter or digit it is a confusable look-alike of."""
    data_file = importlib.resources.files("confusable_homoglyphs").joinpath("confusables.json")
    raw: dict[str, list[dict[str, str]]] = json.loads(data_file.read_text(encoding="utf-8"))
    table: dict[int, str] = {}
    for char, glyphs in raw.items():
        if len(char) != 1 or char.isascii():
            continue
        targets = set()
        for glyph in glyphs:
            candidate = unicodedata.normalize("NFKC", glyph["c"].replace("\u200e", "")).casefold()
            if len(candidate) == 1 and candidate.isascii() and candidate.isalnum():
                targets.add(candidate)
        letters = sorted(t for t in targets if t.isalpha()) or sorted(targets)
        if letters:
            table[ord(char)] = letters[0]
    return table


@dataclass(frozen=True, slots=True)
class Views:
    """The normalized texts the rules run on (see the module docstring)."""

    lowered: str
    folded: str
    joined: str
    compact: str
    leet: str


# A separator inside a word: between two letters, a run of dots, hyphens, underscores,
# asterisks, middle dots, apostrophes or slashes (`I.g.n.o.r.e`, `ig-nore`).
_INWORD_SEPARATOR = re.compile(r"(?<=[a-z])[.\-_*·•'’`~|/\\]{1,3}(?=[a-z])")
# Runs of at least three single letters separated by one space or one separator: `i g n o r e`.
_SPACED_LETTERS = re.compile(r"\b(?:[a-z][ .\-_*]){2,60}[a-z]\b")
_NOT_LETTER = re.compile(r"[^a-z]{1,200}")


# Leetspeak: a token holding a letter and one of these stands-for-a-letter characters.
_LEET_TABLE = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "@": "a", "$": "s"}
)
_LEET_CHARS = frozenset("0134578@$")
_TOKEN = re.compile(r"[a-z0-9@$]{2,60}")


def _unleet_token(match: re.Match[str]) -> str:
    token = match.group()
    if token.isalpha() or not any(c.isalpha() for c in token) or _LEET_CHARS.isdisjoint(token):
        return token
    return token.translate(_LEET_TABLE)


def _unleet(folded: str) -> str:
    if _LEET_CHARS.isdisjoint(folded):
        return folded
    return _TOKEN.sub(_unleet_token, folded)


def _glue(match: re.Match[str]) -> str:
    return re.sub(r"[ .\-_*]", "", match.group())


def _skeleton(lowered: str) -> str:
    table = _skeleton_table()
    if lowered.isascii():
        return lowered
    return lowered.translate(table)


def views(text: str) -> Views:
    """Normalize `text` into the views the rules match against."""
    nfkc = unicodedata.normalize("NFKC", text)
    lowered = _IGNORABLE.sub("", nfkc).casefold()
    # NFKC may have produced new default-ignorables (e.g. U+3164 → U+1160): remove again.
    lowered = _IGNORABLE.sub("", lowered)
    folded = _skeleton(lowered)
    joined = _SPACED_LETTERS.sub(_glue, _INWORD_SEPARATOR.sub("", folded))
    compact = _NOT_LETTER.sub("", folded)
    return Views(lowered=lowered, folded=folded, joined=joined, compact=compact, leet=_unleet(folded))
