"""The wall between the holographic provider and where its facts live: `FactBackend`.

Two stores sit behind it, side by side: `store.FactStore` (one SQLite file per user,
`memory_store.db`) and `_pg.PgFactStore` (rows of the keel PostgreSQL schema, one scope per
user). The provider, the retriever and the tools see only this protocol. The rules a write
obeys — content stripped and non-empty, a known category, the write scanner on content and
tags and on the content joined with the newest facts, duplicates returning the existing id,
trust clamped to [0, 1] — live here as functions both stores call, so they cannot drift.

Every method blocks; async callers run them through `anyio.to_thread.run_sync`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, get_args

from memory.errors import FactBlockedError, FactInputError, FactStoreError
from memory.provenance import recall_free
from memory.providers._guard import blocked_write_message, joined_findings, write_findings
from memory.providers.holographic._entities import ExtractedEntity, extract_entities

if TYPE_CHECKING:
    from memory.providers.holographic.hrr import HrrCodec, Vector

__all__ = [
    "CATEGORIES",
    "HELPFUL_DELTA",
    "NEIGHBOURS",
    "UNHELPFUL_DELTA",
    "AddResult",
    "Category",
    "Fact",
    "FactBackend",
    "FactUpdate",
    "TrustChange",
    "check_joined",
    "check_update",
    "checked_category",
    "clamp",
    "content_taken",
    "fact_from_row",
    "fed_back",
    "load_codec",
    "merged_aliases",
    "missing_fact",
    "new_fact",
    "planned_update",
    "scanned",
]

Category: TypeAlias = Literal["user_pref", "project", "tool", "general"]
CATEGORIES: tuple[Category, ...] = get_args(Category)

HELPFUL_DELTA = 0.05
UNHELPFUL_DELTA = -0.10
NEIGHBOURS = 3
"""A new fact is scanned joined with this many of the newest facts (an attack split in parts)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One stored fact (without its vector)."""

    fact_id: int
    content: str
    category: Category
    tags: str
    trust: float
    retrieval_count: int
    helpful_count: int
    created_at: float
    updated_at: float
    entities: tuple[str, ...]
    kind: Literal["fact"] = "fact"


@dataclass(frozen=True, slots=True)
class AddResult:
    """The id of an added fact; `created` is False when the content was already stored."""

    fact_id: int
    created: bool
    kind: Literal["add_result"] = "add_result"


@dataclass(frozen=True, slots=True)
class FactUpdate:
    """What an update writes over a fact: its new values, checked (`planned_update`).

    `content_changed`: the content differs from the stored one, so the store must check that
    no other fact has it, and re-link its entities and re-encode its vector.
    """

    content: str
    category: Category
    tags: str
    trust: float
    content_changed: bool
    kind: Literal["fact_update"] = "fact_update"


@dataclass(frozen=True, slots=True)
class TrustChange:
    """A trust adjustment: the fact's trust before and after (clamped to [0, 1])."""

    fact_id: int
    old: float
    new: float
    kind: Literal["trust_change"] = "trust_change"


class FactBackend(Protocol):
    """Facts, their entities, a word index and HRR vectors, for one user.

    `codec` is None when vectors are off (numpy missing or not wanted). Unknown ids raise
    `FactInputError`; writes the scanner objects to raise `FactBlockedError`; the store
    failing raises `FactStoreError`.
    """

    codec: HrrCodec | None
    default_trust: float

    @property
    def location(self) -> str:
        """Where the facts live, for messages (a file path, or a schema and scope)."""
        ...

    @property
    def vectors_enabled(self) -> bool: ...

    def close(self) -> None: ...

    def add_fact(self, content: str, *, category: Category = "general", tags: str = "") -> AddResult:
        """Store a fact; identical content returns the existing id unchanged.

        Raises:
            FactBlockedError: the write scanner objects to the content or the tags.
            FactInputError: empty content or an unknown category.
        """
        ...

    def update_fact(
        self,
        fact_id: int,
        *,
        content: str | None = None,
        category: Category | None = None,
        tags: str | None = None,
        trust_delta: float | None = None,
    ) -> Fact:
        """Change a fact's content, category, tags or trust (clamped to [0, 1]).

        Raises:
            FactBlockedError: the write scanner objects to the new content or tags.
            FactInputError: unknown id, empty content, or content another fact already has.
        """
        ...

    def remove_fact(self, fact_id: int) -> Fact:
        """Delete a fact and its entity links; returns what was removed.

        Raises:
            FactInputError: unknown id.
        """
        ...

    def feedback(self, fact_id: int, *, helpful: bool) -> TrustChange:
        """Helpful: trust +0.05 and helpful_count +1; unhelpful: trust −0.10. Clamped to [0, 1]."""
        ...

    def mark_retrieved(self, fact_ids: Sequence[int]) -> None: ...

    def get_fact(self, fact_id: int) -> Fact: ...

    def count(self) -> int: ...

    def list_facts(
        self, *, category: Category | None = None, min_trust: float = 0.0, limit: int = 50
    ) -> list[Fact]:
        """Facts by trust, highest first."""
        ...

    def recent_facts(
        self, *, category: Category | None = None, min_trust: float = 0.0, limit: int = 500
    ) -> list[Fact]:
        """The most recently updated facts, newest first."""
        ...

    def fts_candidates(
        self, terms: Sequence[str], *, category: Category | None, min_trust: float, limit: int
    ) -> list[tuple[Fact, float]]:
        """Facts matching any of `terms` in the word index, best first, with a rank whose
        absolute value grows with relevance."""
        ...

    def like_candidates(
        self, terms: Sequence[str], *, category: Category | None, min_trust: float, limit: int
    ) -> list[tuple[Fact, float]]:
        """Facts containing any of `terms` as substrings, with the fraction of terms matched."""
        ...

    def facts_by_entity(self, name: str, *, min_trust: float = 0.0) -> list[Fact]:
        """Facts linked to the entity called `name` (or with that alias), case-insensitively."""
        ...

    def vectors(self, fact_ids: Sequence[int]) -> dict[int, Vector]:
        """The decoded vectors of these facts (facts without a readable vector are left out)."""
        ...

    def bank(self, category: Category) -> Vector | None:
        """The bundle of every vector in `category` (None without vectors or facts)."""
        ...


def load_codec(dim: int, use_numpy: bool | None) -> HrrCodec | None:
    """The HRR codec, or None when numpy is off (`False`) or, for `None`, not installed.

    Raises:
        FactStoreError: `use_numpy=True` but numpy cannot be imported.
    """
    if use_numpy is False:
        return None
    try:
        from memory.providers.holographic.hrr import HrrCodec
    except ImportError as exc:
        if use_numpy:
            raise FactStoreError("use_numpy=True but numpy is not installed; pip install numpy") from exc
        return None
    return HrrCodec(dim)


def clamp(value: float) -> float:
    """A trust value within [0, 1], rounded so sums of deltas compare equal."""
    return round(min(1.0, max(0.0, value)), 6)


def fed_back(trust: float, *, helpful: bool) -> float:
    """Trust after feedback: up `HELPFUL_DELTA` or down `UNHELPFUL_DELTA`, clamped."""
    return clamp(trust + (HELPFUL_DELTA if helpful else UNHELPFUL_DELTA))


def scanned(content: str, tags: str) -> None:
    """Refuse content or tags the write scanner objects to: recall replays them into turns."""
    findings = write_findings(content) + write_findings(tags)
    if findings:
        raise FactBlockedError(blocked_write_message("fact", findings), findings=findings)


def checked_category(value: str) -> Category:
    for category in CATEGORIES:
        if value == category:
            return category
    raise FactInputError(f"category {value!r} is unknown; use one of {list(CATEGORIES)!r}")


def new_fact(content: str, category: str, tags: str) -> tuple[str, list[ExtractedEntity]]:
    """A fact about to be added, checked: its stripped content and its entities.

    Raises:
        FactInputError: empty content or an unknown category.
        FactBlockedError: the write scanner objects to the content or the tags.
    """
    content = recall_free(content).strip()
    if not content:
        raise FactInputError(
            "fact content is empty (recalled <memory-context> text is never stored); say what should be remembered"
        )
    checked_category(category)
    scanned(content, tags)
    return content, extract_entities(content)


def check_update(content: str | None, category: str | None, tags: str | None) -> None:
    """Check what an update gives before anything is read (None: that part stays).

    Raises:
        FactInputError: an unknown category.
        FactBlockedError: the write scanner objects to the new content or tags.
    """
    if category is not None:
        checked_category(category)
    scanned(content or "", tags or "")


def planned_update(
    old: Fact,
    *,
    content: str | None,
    category: Category | None,
    tags: str | None,
    trust_delta: float | None,
) -> FactUpdate:
    """The values an update writes over `old` (after `check_update`): stripped text, the old
    value where none is given, trust moved by `trust_delta` and clamped.

    Raises:
        FactInputError: the new content is empty.
    """
    new_content = old.content if content is None else recall_free(content).strip()
    if not new_content:
        raise FactInputError("fact content is empty; use action 'remove' to delete a fact")
    return FactUpdate(
        content=new_content,
        category=old.category if category is None else category,
        tags=old.tags if tags is None else tags.strip(),
        trust=old.trust if trust_delta is None else clamp(old.trust + trust_delta),
        content_changed=new_content != old.content,
    )


def content_taken(holder: int, fact_id: int) -> FactInputError:
    """The refusal of an update that would give `fact_id` the content fact `holder` has."""
    return FactInputError(f"fact {holder!r} already has that content; remove fact {fact_id!r} instead")


def missing_fact(fact_id: int) -> FactInputError:
    return FactInputError(f"fact {fact_id!r} does not exist; use action 'list' or 'search' to find ids")


def check_joined(content: str, newest_first: Sequence[str]) -> None:
    """Refuse a fact that completes an attack with the newest stored facts (given newest first)."""
    joined = joined_findings(content, list(reversed(newest_first)))
    if joined:
        raise FactBlockedError(blocked_write_message("fact", joined), findings=joined)


def merged_aliases(known: str, new: Sequence[str]) -> str | None:
    """An entity's comma-separated aliases with the `new` ones it lacks appended (None: no change)."""
    have = [a for a in known.split(",") if a]
    folded = {k.casefold() for k in have}
    added = [a for a in (n.replace(",", " ") for n in new) if a.casefold() not in folded]
    return ",".join(have + added) if added else None


def fact_from_row(row: Sequence[object], entities: tuple[str, ...]) -> Fact:
    """A fact from the columns `fact_id, content, category, tags, trust, retrieval_count,
    helpful_count, created_at, updated_at` (rows come from disk: every column is coerced, an
    unknown category reads as general)."""
    category = str(row[2])
    return Fact(
        fact_id=int(str(row[0])),
        content=str(row[1]),
        category=checked_category(category) if category in CATEGORIES else "general",
        tags=str(row[3] or ""),
        trust=float(str(row[4])),
        retrieval_count=int(str(row[5])),
        helpful_count=int(str(row[6])),
        created_at=float(str(row[7])),
        updated_at=float(str(row[8])),
        entities=entities,
    )
