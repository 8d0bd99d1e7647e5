"""The curated-store text format: parse, serialize, measure, render and locate entries.

Pure functions over strings and tuples; no I/O. A store file is its entries joined by the
3-character delimiter `"\\n§\\n"`; the budget counts those delimiters, because that joined
text is exactly what lands on disk and in the prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from memory.errors import AmbiguousMatchError, InvalidWriteError, NoMatchError
from memory.provenance import holds_recall

__all__ = [
    "DEFAULT_MEMORY_CHAR_LIMIT",
    "DEFAULT_USER_CHAR_LIMIT",
    "ENTRY_DELIMITER",
    "FILE_NAMES",
    "RULE",
    "MemoryTarget",
    "MemoryUsage",
    "check_content",
    "dedupe",
    "fit_to_budget",
    "joined_length",
    "locate",
    "measure",
    "omitted_notice",
    "parse_entries",
    "preview",
    "render_block",
    "round_trips",
    "serialize_entries",
]

MemoryTarget = Literal["memory", "user"]

ENTRY_DELIMITER = "\n§\n"
DEFAULT_MEMORY_CHAR_LIMIT = 2200
DEFAULT_USER_CHAR_LIMIT = 1375
RULE = "═" * 46
FILE_NAMES: dict[MemoryTarget, str] = {"memory": "MEMORY.md", "user": "USER.md"}
_HEADERS: dict[MemoryTarget, str] = {
    "memory": "MEMORY (your personal notes)",
    "user": "USER PROFILE (who the user is)",
}


@dataclass(frozen=True, slots=True)
class MemoryUsage:
    """How much of a store's budget is used.

    Attributes:
        target: `memory` or `user`.
        chars: length of the entries joined with the delimiter.
        limit: the character budget.
        percent: floor(chars / limit × 100), capped at 100.
        entry_count: number of entries.
    """

    target: MemoryTarget
    chars: int
    limit: int
    percent: int
    entry_count: int

    @property
    def over_budget(self) -> bool:
        """More characters than the budget (possible only after a hand edit)."""
        return self.chars > self.limit

    @property
    def gauge(self) -> str:
        """`67% — 1,474/2,200 chars`, or `OVER BUDGET — 10,500,000/2,200 chars`."""
        if self.over_budget:
            return f"OVER BUDGET — {self.chars:,}/{self.limit:,} chars"
        return f"{self.percent}% — {self.chars:,}/{self.limit:,} chars"


def parse_entries(text: str) -> tuple[str, ...]:
    """Split file text into entries: split on the full delimiter, strip, drop empty pieces.

    A lone `§` inside an entry is not a delimiter and survives.
    """
    return tuple(piece.strip() for piece in text.split(ENTRY_DELIMITER) if piece.strip())


def serialize_entries(entries: Sequence[str]) -> str:
    """The file text for `entries` (empty string for an empty store)."""
    return ENTRY_DELIMITER.join(entries)


def round_trips(text: str) -> bool:
    """True when `text` is exactly what serializing its parsed entries gives back (modulo
    surrounding whitespace): nobody added free-form text or stray delimiters by hand."""
    return text.strip() == serialize_entries(parse_entries(text))


def dedupe(entries: Iterable[str]) -> tuple[str, ...]:
    """Drop repeated entries, keeping the first occurrence's position."""
    return tuple(dict.fromkeys(entries))


def joined_length(entries: Sequence[str]) -> int:
    """Characters the entries take on disk, delimiters included."""
    if not entries:
        return 0
    return sum(len(e) for e in entries) + len(ENTRY_DELIMITER) * (len(entries) - 1)


def measure(target: MemoryTarget, entries: Sequence[str], limit: int) -> MemoryUsage:
    """The usage of `entries` against `limit`."""
    chars = joined_length(entries)
    percent = min(100, chars * 100 // limit) if limit > 0 else 100
    return MemoryUsage(target=target, chars=chars, limit=limit, percent=percent, entry_count=len(entries))


def render_block(
    target: MemoryTarget, entries: Sequence[str], usage: MemoryUsage, *, title: str | None = None
) -> str:
    """The prompt block: rule, header with the gauge, rule, entries. Empty store → `""`.

    `usage` is passed separately because the block may show sanitized entries while the
    gauge always reports the real store. `title` replaces the target's usual heading
    (a shared workspace's MEMORY.md is shown under its own).
    """
    if not entries:
        return ""
    header = f"{title or _HEADERS[target]} [{usage.gauge}]"
    return f"{RULE}\n{header}\n{RULE}\n{serialize_entries(entries)}"


def omitted_notice(target: MemoryTarget, count: int, chars: int, limit: int) -> str:
    """The line that stands in for entries an over-budget store leaves out of the prompt."""
    noun = "entry" if count == 1 else "entries"
    return (
        f"[{count:,} more {noun} ({chars:,} chars) of {FILE_NAMES[target]} did not fit the {limit:,}-char "
        "budget and are not shown. They are still in the file; merge or remove entries to bring it "
        "back under budget.]"
    )


def fit_to_budget(
    target: MemoryTarget, entries: Sequence[str], limit: int, shown: Callable[[str], str]
) -> tuple[str, ...]:
    """What the prompt shows of a store that is over its budget.

    Entries are taken in file order, each as `shown(entry)` (the sanitized text), while
    the text shown so far plus the next one and the omission notice still fit in `limit`;
    entries that do not fit are skipped and counted, and the notice (`omitted_notice`) is
    the last item. So the entries shown plus the notice never exceed the budget (for any
    budget above ~250 chars; below that only the notice is shown), whatever the file holds,
    and `shown` runs only on entries that can still fit (a 10 MB file is not scanned whole).
    """
    out: list[str] = []
    used = 0
    skipped = skipped_chars = 0
    # Room for the notice, which is at most ~220 chars with 9-digit counts.
    room = max(limit - len(omitted_notice(target, 10**9, 10**12, limit)) - len(ENTRY_DELIMITER), 0)
    for entry in entries:
        remaining = room - used - (len(ENTRY_DELIMITER) if out else 0)
        # The length check comes first: only entries that can fit are scanned.
        text = shown(entry) if len(entry) <= remaining else None
        if text is not None and len(text) <= remaining:
            used = room - remaining + len(text)
            out.append(text)
        else:
            skipped += 1
            skipped_chars += len(entry)
    if skipped:
        out.append(omitted_notice(target, skipped, skipped_chars, limit))
    return tuple(out)


def check_content(content: str, *, what: str = "content") -> str:
    """Strip `content` and make sure it can be stored as exactly one entry.

    Raises:
        InvalidWriteError: it is empty, cannot be encoded as UTF-8, or a line of it is a lone
            `§` (which would split it).
    """
    # CRLF is folded on read, so fold it here too: what we write must read back unchanged.
    text = content.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise InvalidWriteError(f"{what} cannot be empty; give the text of one entry.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidWriteError(
            f"{what} holds characters that cannot be stored as UTF-8 (unpaired surrogates); remove them."
        ) from None
    if holds_recall(text):
        raise InvalidWriteError(
            f"{what} holds a <memory-context> block: memory recalled for this turn, not something "
            "anyone said; save the fact in your own words, without the block."
        )
    if "§" in text and any(line == "§" for line in text.split("\n")):
        raise InvalidWriteError(
            f"{what} has a line holding only '§', which is the entry separator; "
            "remove that line or add text next to the '§'."
        )
    return text


def preview(entry: str, width: int = 80) -> str:
    """The first `width` characters of an entry on one line, with `...` when cut."""
    flat = " ".join(entry.split())
    return flat if len(flat) <= width else flat[:width] + "..."


def locate(entries: Sequence[str], old_text: str) -> int:
    """The index of the one entry `old_text` designates.

    An entry exactly equal to `old_text` wins. Otherwise every entry containing it matches;
    several *distinct* matching entries are ambiguous, identical duplicates resolve to the
    first.

    Raises:
        InvalidWriteError: `old_text` is empty.
        NoMatchError: no entry contains it.
        AmbiguousMatchError: several distinct entries contain it.
    """
    needle = old_text.strip()
    if not needle:
        raise InvalidWriteError("old_text cannot be empty; give a short unique part of the entry.")
    for index, entry in enumerate(entries):
        if entry == needle:
            return index
    matches = [i for i, entry in enumerate(entries) if needle in entry]
    if not matches:
        raise NoMatchError(
            f"No entry contains {needle!r}. Retry with old_text copied exactly from part of one entry."
        )
    distinct = dedupe(entries[i] for i in matches)
    if len(distinct) > 1:
        raise AmbiguousMatchError(
            f"{len(distinct)} different entries contain {needle!r}; nothing was changed. "
            "Retry with a longer old_text that only one entry contains.",
            previews=[preview(e) for e in distinct],
        )
    return matches[0]
