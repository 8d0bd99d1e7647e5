"""Write operations on a list of entries: the op values and the pure planner.

`plan_write` takes the entries read from disk (under the lock) and a sequence of ops and
returns the final entries plus what was committed and evicted — or raises a
`WriteRefused` and nothing is written. The budget is checked on the final state only, so
one batch can free room and add in the same call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from memory.curated._entries import (
    FILE_NAMES,
    MemoryTarget,
    check_content,
    dedupe,
    joined_length,
    locate,
    parse_entries,
    serialize_entries,
)
from memory.errors import InvalidWriteError, StoreFullError, WriteRefused

__all__ = [
    "AddOp",
    "CommittedOp",
    "MemoryOp",
    "OverflowPolicy",
    "RemoveOp",
    "ReplaceOp",
    "WritePlan",
    "plan_write",
]

OverflowPolicy = Literal["reject", "evict_oldest"]

_BATCH_SUFFIX = " No operations were applied (batch is all-or-nothing)."


@dataclass(frozen=True, slots=True)
class AddOp:
    """Append `content` as a new entry (an exact duplicate is a successful no-op)."""

    content: str
    kind: Literal["add"] = "add"


@dataclass(frozen=True, slots=True)
class ReplaceOp:
    """Replace the whole entry that `old_text` designates with `content`."""

    old_text: str
    content: str
    kind: Literal["replace"] = "replace"


@dataclass(frozen=True, slots=True)
class RemoveOp:
    """Delete the entry that `old_text` designates."""

    old_text: str
    kind: Literal["remove"] = "remove"


MemoryOp: TypeAlias = AddOp | ReplaceOp | RemoveOp


@dataclass(frozen=True, slots=True)
class CommittedOp:
    """One change that actually landed on disk.

    Attributes:
        kind: `add`, `replace` or `remove`.
        target: the store it landed in.
        content: the entry written (add, replace); `None` for remove.
        previous: the whole entry that was overwritten or deleted (replace, remove); `None` for add.
        old_text: the substring that located that entry (replace, remove); `None` for add.
    """

    kind: Literal["add", "replace", "remove"]
    target: MemoryTarget
    content: str | None
    previous: str | None
    old_text: str | None = None


@dataclass(frozen=True, slots=True)
class WritePlan:
    """The outcome of planning: the entries to write and what changed."""

    entries: tuple[str, ...]
    committed: tuple[CommittedOp, ...]
    evicted: tuple[str, ...]
    skipped_duplicates: int


def _refuse(exc: WriteRefused, prefix: str, suffix: str) -> WriteRefused:
    exc.args = (f"{prefix}{exc.args[0] if exc.args else ''}{suffix}",)
    return exc


def plan_write(
    target: MemoryTarget,
    current: Sequence[str],
    ops: Sequence[MemoryOp],
    *,
    limit: int,
    overflow: OverflowPolicy,
    batch: bool,
) -> WritePlan:
    """Apply `ops` in order to a copy of `current` and check the result.

    Args:
        target: the store the ops apply to (named in messages and committed ops).
        current: the entries on disk, in order, duplicates included.
        ops: the operations; a batch may hold several, a single write holds one.
        limit: the character budget.
        overflow: `reject` refuses an over-budget result; `evict_oldest` drops the oldest
            entries this call did not write until the result fits.
        batch: number errors "Operation N:" and say the batch was all-or-nothing.

    Raises:
        WriteRefused: a subclass naming the problem; nothing may be written.
    """
    suffix = _BATCH_SUFFIX if batch else ""
    if not ops:
        raise InvalidWriteError("operations is empty; give at least one add, replace or remove.")
    working = list(current)
    committed: list[CommittedOp] = []
    written: set[str] = set()
    skipped = 0
    for n, op in enumerate(ops, start=1):
        try:
            if op.kind == "add":
                text = check_content(op.content)
                if text in working:
                    skipped += 1
                    continue
                working.append(text)
                written.add(text)
                committed.append(CommittedOp("add", target, text, None))
            elif op.kind == "replace":
                text = check_content(op.content, what="content (the new text of the entry)")
                index = locate(working, op.old_text)
                previous = working[index]
                if previous == text:
                    continue
                working[index] = text
                written.add(text)
                committed.append(CommittedOp("replace", target, text, previous, op.old_text))
            else:
                index = locate(working, op.old_text)
                previous = working.pop(index)
                committed.append(CommittedOp("remove", target, None, previous, op.old_text))
        except WriteRefused as exc:
            raise _refuse(exc, f"Operation {n}: " if batch else "", suffix) from None

    final = dedupe(working)
    if batch and current and not final:
        raise InvalidWriteError(
            "This batch would delete every entry. To empty the store on purpose, remove entries "
            f"one call at a time.{suffix}"
        )
    # Defence in depth: what we write must parse back into exactly these entries.
    if parse_entries(serialize_entries(final)) != final:
        raise InvalidWriteError(f"The content would not read back as the same entries.{suffix}")

    evicted: tuple[str, ...] = ()
    size = joined_length(final)
    before = joined_length(dedupe(current))
    # A store already over budget (edited by hand) may still shrink; only growth past the
    # limit is refused, so removals never deadlock.
    if committed and size > limit and size > before:
        if overflow == "evict_oldest":
            final, evicted = _evict_oldest(final, written, limit)
        if joined_length(final) > limit:
            raise StoreFullError(_full_message(target, final, written, size, before, limit) + suffix)
    return WritePlan(entries=final, committed=tuple(committed), evicted=evicted, skipped_duplicates=skipped)


def _evict_oldest(
    entries: tuple[str, ...], protected: set[str], limit: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    kept = list(entries)
    evicted: list[str] = []
    index = 0
    while joined_length(kept) > limit and index < len(kept):
        if kept[index] in protected:
            index += 1
            continue
        evicted.append(kept.pop(index))
    if joined_length(kept) > limit:
        return entries, ()  # eviction cannot make it fit; the caller refuses
    return tuple(kept), tuple(evicted)


def _full_message(
    target: MemoryTarget, final: Sequence[str], written: set[str], size: int, before: int, limit: int
) -> str:
    name = FILE_NAMES[target]
    own = joined_length([e for e in final if e in written])
    if own > limit:
        return (
            f"The new text is {own:,} chars but {name} holds at most {limit:,}. "
            "Write a much shorter entry (one fact, no lists or logs)."
        )
    return (
        f"{name} is full: the result would be {size:,}/{limit:,} chars (now {before:,}/{limit:,}). "
        "Consolidate now and retry in this turn: use 'replace' to merge related entries into one "
        "shorter entry and 'remove' stale ones, ideally in one call with 'operations' (the budget "
        "is checked on the final result), then add the new fact."
    )
