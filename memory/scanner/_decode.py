"""Hidden text: base64 and hex runs decoded, Unicode tag characters read back, HTML and
percent escapes undone, text written backwards turned round.

A run is decoded only when it turns into readable UTF-8 text (mostly printable, with
letters and a space): keys, hashes, images and other binary payloads are left alone.
Escapes are undone when the text holds character references (`&#105;`, `&amp;`) or
percent escapes (`%69`), repeatedly, so an escape inside an escape is read too. Text is
turned round when its reversal reads as English and the text itself does not (common
words counted both ways). The decoded texts are scanned with the same rules as the text
around them.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import urllib.parse

from memory.scanner._normalize import TAG_RANGE

__all__ = ["MAX_DECODED", "decoded_payloads", "reversed_text", "tag_text", "unescaped"]

MAX_DECODED = 16
"""At most this many runs are decoded per scan (bounded work on a text full of them)."""

_BASE64 = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/]{20,20000}={0,2}(?![\w+/=-])")
_BASE64_URL = re.compile(r"(?<![\w=-])[A-Za-z0-9_-]{20,20000}={0,2}(?![\w=-])")
_HEX = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){12,10000}(?![0-9a-fA-F])")


def _readable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t")
    letters = sum(1 for c in text if c.isalpha())
    if printable / len(text) < 0.95 or letters < 6 or " " not in text:
        return None
    return text


def _b64(run: str, *, urlsafe: bool) -> bytes | None:
    padded = run + "=" * (-len(run.rstrip("=")) % 4) if "=" not in run else run
    try:
        if urlsafe:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def decoded_payloads(text: str) -> list[tuple[str, str]]:
    """`(encoding, decoded text)` for each readable base64/hex run in `text`."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    candidates: list[tuple[str, str]] = [("hex", m.group()) for m in _HEX.finditer(text)]
    candidates += [("base64", m.group()) for m in _BASE64.finditer(text)]
    candidates += [("base64", m.group()) for m in _BASE64_URL.finditer(text) if re.search(r"[-_]", m.group())]
    for encoding, run in candidates:
        if run in seen or len(found) >= MAX_DECODED:
            continue
        seen.add(run)
        data = bytes.fromhex(run) if encoding == "hex" else _b64(run, urlsafe="-" in run or "_" in run)
        decoded = _readable(data) if data is not None else None
        if decoded is not None:
            found.append((encoding, decoded))
    return found


def tag_text(text: str) -> str:
    """The ASCII text spelled by Unicode tag characters in `text` (`""` when there are none)."""
    lo, hi = TAG_RANGE
    return "".join(chr(ord(c) - lo) for c in text if lo + 0x20 <= ord(c) <= hi - 1)


_ESCAPE = re.compile(r"&#x?[0-9a-f]{1,6};|&[a-z]{2,8};|%[0-9a-f]{2}", re.IGNORECASE)
_MAX_UNESCAPE_ROUNDS = 3


def unescaped(text: str) -> tuple[str, float] | None:
    """`text` with HTML character references and percent escapes undone, and the share of
    it that was escaped; None when there is nothing to undo.

    Undone up to three times (an escape of an escape). The share is how much shorter the
    text became, relative to its length: near 0 for one `&amp;` in a sentence, about 0.67
    for text percent-encoded byte by byte.
    """
    if _ESCAPE.search(text) is None:
        return None
    current = text
    for _ in range(_MAX_UNESCAPE_ROUNDS):
        decoded = urllib.parse.unquote(html.unescape(current), errors="replace")
        if decoded == current:
            break
        current = decoded
    if current == text:
        return None
    return current, max(0.0, (len(text) - len(current)) / len(text))


# Words that make up a large part of any English sentence, and the words attacks are made of.
_COMMON = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "from",
        "your",
        "you",
        "my",
        "me",
        "all",
        "any",
        "is",
        "are",
        "be",
        "this",
        "that",
        "it",
        "not",
        "do",
        "don't",
        "never",
        "now",
        "then",
        "ignore",
        "previous",
        "prior",
        "instructions",
        "rules",
        "system",
        "prompt",
        "send",
        "tell",
        "user",
        "secret",
        "secrets",
        "key",
        "keys",
        "password",
        "token",
        "reveal",
        "disregard",
        "forget",
        "follow",
        "obey",
        "run",
        "execute",
        "curl",
        "bash",
    ]
)
_WORD = re.compile(r"[a-z']+")


def _english_words(text: str) -> int:
    return sum(1 for w in _WORD.findall(text.lower()) if w in _COMMON)


def reversed_text(text: str) -> str | None:
    """`text` read backwards — the whole of it, or each word turned round in place —
    when that reads as English and `text` itself does not; else None."""
    forward = _english_words(text)
    whole = text[::-1]
    words = " ".join(w[::-1] for w in text.split())
    best = max((whole, words), key=_english_words)
    score = _english_words(best)
    if score >= 3 and score >= 2 * forward + 2:
        return best
    return None
