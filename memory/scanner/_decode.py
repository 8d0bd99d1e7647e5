"""Hidden text: base64 and hex runs decoded, Unicode tag characters read back.

A run is decoded only when it turns into readable UTF-8 text (mostly printable, with
letters and a space): keys, hashes, images and other binary payloads are left alone. The
decoded texts are scanned with the same rules as the text around them.
"""

from __future__ import annotations

import base64
import binascii
import re

from memory.scanner._normalize import TAG_RANGE

__all__ = ["MAX_DECODED", "decoded_payloads", "tag_text"]

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
