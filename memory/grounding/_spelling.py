"""A name said in one script and written down in Latin letters: "Андрей" as "Andrei".

A small model asked for facts in English writes the user's name in Latin letters whatever
script the user wrote it in: "Меня зовут Андрей" becomes "The user's name is Andrei",
"Είμαι η Ελένη" "Eleni", "मेरा नाम राहुल है" "Rahul", "اسمي ليلى" "Layla". The words are not the
same, yet nothing was invented. `skeleton` reduces a word to the consonants that carry it
across spellings: Cyrillic, Greek, Devanagari and Arabic letters are spelled out in Latin,
then vowels (Arabic writes none of its short ones), h, w and y are dropped, a few letters
that spellings swap are merged (c/q/k, f/p, v/b, z/s, x/ks, j/g) and doubled letters
read once — so "Андрей", "Andrei" and "Andrey" all read `ndr`. Chinese and Japanese names
have no such spelling here: their Latin forms are other words.
"""

from __future__ import annotations

import unicodedata

__all__ = ["skeleton"]


def _table(letters: str, spellings: str) -> dict[str, str]:
    """Each letter with its Latin spelling (the spellings space-separated, `_` for none)."""
    return dict(zip(letters, spellings.split(), strict=True))


_CYRILLIC = _table(
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "a b v g d e e zh z i y k l m n o p r s t u f kh ts ch sh shch _ y _ e yu ya",
)
_GREEK = _table(
    "αβγδεζηθικλμνξοπρσςτυφχψω",
    "a v g d e z i th i k l m n x o p r s s t y f ch ps o",
)
_DEVANAGARI = _table(
    "कखगघङचछजझञटठडढणतथदधनपफबभमयरलवशषसह",
    "k kh g gh n ch chh j jh n t th d dh n t th d dh n p ph b bh m y r l v sh sh s h",
)
_ARABIC = _table(
    "بتثجحخدذرزسشصضطظغفقكلمنهويىةأإآؤئ",
    "b t th j h kh d dh r z s sh s d t z gh f q k l m n h w y a a a i a w y",
)
_LETTERS = {**_CYRILLIC, **_GREEK, **_DEVANAGARI, **_ARABIC}
_MERGED = str.maketrans({"c": "k", "q": "k", "f": "p", "v": "b", "z": "s", "x": "ks", "j": "g"})
_SILENT = frozenset("aeiouhwy_")


def _latin(word: str) -> str:
    # accents off first: "ά" → "α", "é" → "e"; a Devanagari vowel sign or an Arabic vowel
    # mark is dropped with them
    bare = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if not unicodedata.combining(c))
    return "".join(_LETTERS.get(c, c) for c in bare)


def skeleton(word: str) -> str:
    """The consonants that carry `word` across scripts and spellings (see the module)."""
    letters = [c for c in _latin(word).translate(_MERGED) if c.isascii() and c.isalpha()]
    # a doubled letter is one sound ("Amman", "Θεσσαλονίκη"); the same letter either side of
    # a vowel is two ("Layla": l-l)
    single = [c for i, c in enumerate(letters) if i == 0 or letters[i - 1] != c]
    return "".join(c for c in single if c not in _SILENT)
