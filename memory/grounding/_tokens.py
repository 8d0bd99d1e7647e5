"""Is a fact a model wrote down supported by the words that were actually said?

Small models invent plausible detail when asked to list facts: "Caroline is a 25-year-old
software engineer" from a conversation that never gave her age or job, "Sam is using Rust
version 1.56.0" from a bare "I maintain a Rust web service". Both the semantic provider's
learning and the compression flush keep a fact only when it is `grounded` in the text it
came from: every token with a digit in it occurs there as written, and at least `share` of
its other content words occur there too, compared by a crude stem (so "deploys" matches
"deploy" and "uses" "use"). Words about the user as such ("user", "user's") are not content.

A name said in another script and written in Latin letters is not an invention either
("Andrei" for "Андрей", "Layla" for "ليلى": `_spelling.skeleton`).

A paraphrase is not an invention: a word counts as said when a word of the same meaning was
(`_SAME`: "employer" for "work at", "lives in" for "moved to", "codes" for "writes", GCP for
Google Cloud), so "Sam's employer is Acme" rests on "I work at Acme".

Words are Unicode words, so a fact in Cyrillic, Greek, Arabic or Devanagari is judged by the
same rule as one in Latin letters (a Devanagari vowel sign or an Arabic vowel mark belongs to
its word). Chinese, Japanese and Korean put no spaces between words: a run of those
characters counts as its overlapping character pairs, so "王丽" in "我叫王丽" is found.
"""

from __future__ import annotations

import re
import unicodedata

from memory._words import STOPWORDS
from memory.grounding._spelling import skeleton

__all__ = ["content_stems", "content_words", "grounded", "stem", "tokens"]

_JOINERS = ".-'’"
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_ABOUT_THE_USER = frozenset(
    {
        "user",
        "user's",
        "users",
        "用户",
        "пользователь",
        "пользователя",
        "χρήστης",
        "χρήστη",
        "المستخدم",
        "उपयोगकर्ता",
    }
)
# Function words of the other scripts the facts files hold: enough that a bare name is still
# "a bare word", not a fact.
_OTHER_STOPWORDS = frozenset(
    [
        "и",
        "в",
        "во",
        "не",
        "на",
        "я",
        "мне",
        "меня",
        "мой",
        "моя",
        "с",
        "со",
        "что",
        "это",
        "как",
        "а",
        "но",
        "он",
        "она",
        "они",
        "мы",
        "вы",
        "ты",
        "у",
        "к",
        "из",
        "за",
        "по",
        "ο",
        "η",
        "το",
        "οι",
        "τα",
        "και",
        "σε",
        "στη",
        "στο",
        "στην",
        "με",
        "να",
        "δεν",
        "είμαι",
        "μου",
        "μας",
        "في",
        "من",
        "على",
        "و",
        "أنا",
        "لا",
        "إلى",
        "عن",
        "مع",
        "هذا",
        "है",
        "हूँ",
        "हैं",
        "में",
        "मैं",
        "मेरा",
        "मेरी",
        "हम",
        "का",
        "की",
        "के",
        "को",
        "और",
        "पर",
        "से",
        "नहीं",
    ]
)


# Groups of words that say the same about a user; each word stands for the others.
_SAME_GROUPS = (
    "employer employed employs work works worked job company",
    "live lives lived living moved move based home",
    "code codes coding write writes writing program programs programming develop develops",
    "gcp google cloud",
    "aws amazon",
    "k8s kubernetes",
    "js javascript",
    "ts typescript",
    "postgres postgresql",
    "prefer prefers preferred like likes favourite favorite love loves",
    "use uses using used work works",
)


def _same_meaning(groups: tuple[str, ...]) -> dict[str, frozenset[str]]:
    same: dict[str, frozenset[str]] = {}
    for group in groups:
        words = frozenset(group.split())
        for word in words:
            same[word] = same.get(word, frozenset()) | words
    return same


_SAME = _same_meaning(_SAME_GROUPS)


def _said_as(word: str, stems: set[str]) -> bool:
    """`word`, or a word of the same meaning, is among the said `stems`."""
    return stem(word) in stems or any(stem(w) in stems for w in _SAME.get(word, ()))


def _word_char(c: str) -> bool:
    return unicodedata.category(c)[0] in "LNM"


def _split(text: str) -> list[str]:
    """Runs of letters, digits and marks, with `.`, `-` and `'` kept inside them (9.81, eu-west-1, o'neill)."""
    out: list[str] = []
    word: list[str] = []
    for i, c in enumerate(text):
        inner = c in _JOINERS and word and i + 1 < len(text) and _word_char(text[i + 1])
        if _word_char(c) or inner:
            word.append(c)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


def _pairs(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def tokens(text: str) -> list[str]:
    """The lower-cased words of `text` (CJK runs as character pairs, see the module)."""
    out: list[str] = []
    for word in _split(text.lower()):
        if not _UNSPACED.search(word):
            out.append(word)
            continue
        # a Latin name glued to Chinese ("用Figma做") is a word of its own
        for part in re.split(f"({_UNSPACED.pattern}+)", word):
            if part:
                out.extend(_pairs(part) if _UNSPACED.match(part) else [part])
    return out


def stem(word: str) -> str:
    """A crude stem: a plural or verb ending off and the first five characters (Latin
    letters); the first four in other scripts, whose endings are longer."""
    if word.isascii():
        for suffix in ("ing", "ed", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        return word[:5]
    if word.startswith(("ال", "وال")) and len(word) > 4:
        word = word[word.index("ال") + 2 :]  # the Arabic article is not part of the word
    return word[:4]


def content_words(text: str) -> list[str]:
    """The lower-cased words of `text` that carry content (no stopwords, no "user")."""
    return [
        t
        for t in tokens(text)
        if t and t not in STOPWORDS and t not in _OTHER_STOPWORDS and t not in _ABOUT_THE_USER
    ]


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
    said = set(tokens(source))
    stems = {stem(t) for t in said}
    words = [w for w in content_words(candidate) if w not in labels]
    if not words:
        return False
    if any(any(c.isdigit() for c in w) and w not in said for w in words):
        return False
    spelled = _spelled(said)
    return sum(_said_as(w, stems) or _spelled_as(w, spelled) for w in words) / len(words) >= share


_SKELETON = 2
"""Consonants a name must keep to count as the same name in another script ("ndr", "ll")."""


def _spelled(said: set[str]) -> set[str]:
    """The skeletons of the said words written in another script than Latin."""
    out = {skeleton(t) for t in said if not t.isascii() and not _UNSPACED.search(t)}
    return {s for s in out if len(s) >= _SKELETON}


def _spelled_as(word: str, spelled: set[str]) -> bool:
    """A Latin word that spells a said word of another script: "Andrei" for "Андрей"."""
    return bool(spelled) and word.isascii() and len(word) >= 3 and skeleton(word) in spelled
