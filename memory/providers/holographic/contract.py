"""The wall between the holographic provider and where its facts live: `FactBackend`.

Two stores sit behind it, side by side: `store.FactStore` (one SQLite file per user,
`memory_store.db`) and `_pg.PgFactStore` (rows of the keel PostgreSQL schema, one scope per
user). The provider, the retriever and the tools see only this protocol. The rules a write
obeys — content stripped and non-empty, a known category, the write scanner on content and
tags and on the content joined with the newest facts, duplicates returning the existing id,
trust clamped to [0, 1] — live here, and the writes themselves are written once
(`FactWrites`) over a store's `FactTxn`: a store reads rows and runs one transaction.

Every method blocks; async callers run them through `anyio.to_thread.run_sync`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
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
    "ORDER_BY",
    "UNHELPFUL_DELTA",
    "AddResult",
    "Category",
    "Fact",
    "FactBackend",
    "FactFilter",
    "FactOrder",
    "FactRows",
    "FactTxn",
    "FactUpdate",
    "FactWrites",
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

_log = logging.getLogger(__name__)

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


FactOrder: TypeAlias = Literal["trust", "recent"]
"""How facts are listed: by trust (highest first) or by last update (newest first)."""

ORDER_BY: dict[FactOrder, str] = {
    "trust": "f.trust_score DESC, f.updated_at DESC, f.fact_id DESC",
    "recent": "f.updated_at DESC, f.fact_id DESC",
}
"""The `ORDER BY` of each `FactOrder` over a store's fact table aliased `f` (both stores name
the columns alike)."""


@dataclass(frozen=True, slots=True)
class FactFilter:
    """Which facts a read keeps: at least `min_trust`, of `category` unless it is None."""

    category: Category | None
    min_trust: float


class FactRows(Protocol):
    """One transaction of a fact store as the reads see it: it answers with rows made facts
    (`fact_from_row`) and keeps the category banks; the rules are `FactBackend`'s."""

    def fact(self, fact_id: int) -> Fact:
        """The fact `fact_id`; `missing_fact` when there is none."""
        ...

    def count(self) -> int:
        """How many facts there are."""
        ...

    def select(self, order: FactOrder, where: FactFilter, limit: int) -> list[Fact]:
        """At most `limit` facts passing `where`, in `order`."""
        ...

    def word_matches(self, terms: Sequence[str], where: FactFilter, limit: int) -> list[tuple[Fact, float]]:
        """Facts matching any of `terms` (at least one) in the word index, best first, with a
        rank whose absolute value grows with relevance."""
        ...

    def substring_matches(
        self, terms: Sequence[str], where: FactFilter, limit: int
    ) -> list[tuple[Fact, int]]:
        """Facts containing any of `terms` (at least one), with how many of them they contain."""
        ...

    def by_entity(self, name: str, min_trust: float) -> list[Fact]:
        """Facts linked to the entity called `name` (or with that alias), case-insensitively."""
        ...

    def vector_blobs(self, fact_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """The stored vectors (codec bytes) of those of these facts that have one."""
        ...

    def cached_bank(self, category: Category, dim: int) -> bytes | None:
        """The category's bank of this dimension, if it is still valid."""
        ...

    def category_vectors(self, category: Category, dim: int) -> list[bytes]:
        """The vectors of every fact in the category (this dimension)."""
        ...

    def save_bank(self, category: Category, vector: bytes, dim: int, facts: int, at: float) -> None:
        """Keep a rebuilt bank, valid until the category is written again."""
        ...


class FactTxn(FactRows, Protocol):
    """One write transaction of a fact store: the rows the rules read and the changes they
    stage (entities, vectors and category banks follow the rows); all of it commits when the
    block ends, nothing when it raises."""

    def by_content(self, content: str, *, besides: int | None = None) -> int | None:
        """The id of the fact saying exactly `content` (other than `besides`), if any."""
        ...

    def newest(self, limit: int) -> list[str]:
        """The contents of the `limit` most recently updated facts, newest first."""
        ...

    def insert(
        self, content: str, category: Category, tags: str, at: float, entities: Sequence[ExtractedEntity]
    ) -> int:
        """Add a fact at the store's default trust, with its entities and vector; its new id."""
        ...

    def change(self, fact_id: int, old: Fact, new: FactUpdate, at: float) -> None:
        """Write `new` over the fact (new content: new entities and a new vector)."""
        ...

    def remove(self, fact: Fact) -> None:
        """Delete the fact and its entity links."""
        ...

    def trust(self, fact_id: int) -> float:
        """The fact's trust, locked for the transaction; `missing_fact` when there is none."""
        ...

    def set_trust(self, fact_id: int, trust: float, *, helpful: bool) -> None:
        """Store a trust moved by feedback (and count a helpful one)."""
        ...

    def count_retrievals(self, fact_ids: Sequence[int]) -> None:
        """Count one more retrieval for each fact."""
        ...


class FactWrites(Protocol):
    """`FactBackend`'s writes, written once over a store's `FactTxn`: a store subclasses this
    and provides `_write` (one transaction; `ordered=False` for a feedback, which needs only
    the fact's own row lock) and `_now` (its clock)."""

    _now: Callable[[], float]

    def _write(self, *, ordered: bool = True) -> AbstractContextManager[FactTxn]:
        """One write transaction."""
        ...

    def add_fact(self, content: str, *, category: Category = "general", tags: str = "") -> AddResult:
        """Add a fact; identical content returns the existing id (`created=False`).

        Raises:
            FactInputError: empty content or an unknown category.
            FactBlockedError: the write scanner objects to it (alone, or joined with the
                newest facts).
        """
        content, entities = new_fact(content, category, tags)
        with self._write() as txn:
            existing = txn.by_content(content)
            if existing is not None:
                return AddResult(fact_id=existing, created=False)
            # The newest facts are the ones a new fact is most likely recalled beside.
            check_joined(content, txn.newest(NEIGHBOURS))
            fact_id = txn.insert(content, category, tags.strip(), self._now(), entities)
        return AddResult(fact_id=fact_id, created=True)

    def update_fact(
        self,
        fact_id: int,
        *,
        content: str | None = None,
        category: Category | None = None,
        tags: str | None = None,
        trust_delta: float | None = None,
    ) -> Fact:
        """Change a fact (`check_update`, then `planned_update`); returns it as stored.

        Raises:
            FactInputError: an unknown id, or the new content is another fact's.
        """
        check_update(content, category, tags)
        with self._write() as txn:
            old = txn.fact(fact_id)
            new = planned_update(old, content=content, category=category, tags=tags, trust_delta=trust_delta)
            if new.content_changed:
                clash = txn.by_content(new.content, besides=fact_id)
                if clash is not None:
                    raise content_taken(clash, fact_id)
            txn.change(fact_id, old, new, self._now())
            return txn.fact(fact_id)

    def remove_fact(self, fact_id: int) -> Fact:
        """Remove a fact and its entity links; returns what was removed."""
        with self._write() as txn:
            fact = txn.fact(fact_id)
            txn.remove(fact)
        return fact

    def feedback(self, fact_id: int, *, helpful: bool) -> TrustChange:
        """Move a fact's trust by the helpful or unhelpful delta, clamped to [0, 1]."""
        with self._write(ordered=False) as txn:
            old = txn.trust(fact_id)
            new = fed_back(old, helpful=helpful)
            txn.set_trust(fact_id, new, helpful=helpful)
        return TrustChange(fact_id=fact_id, old=old, new=new)


class FactBackend(FactWrites, Protocol):
    """Facts, their entities, a word index and HRR vectors, for one user. The writes —
    `add_fact`, `update_fact`, `remove_fact`, `feedback` — are `FactWrites`'; the reads are
    written here once over a store's `FactRows`: a store subclasses this and provides `_read`
    (one read transaction) and `_banks` (the transaction a stale bank is rebuilt in).

    `codec` is None when vectors are off (numpy missing or not wanted). Unknown ids raise
    `FactInputError`; writes the scanner objects to raise `FactBlockedError`; the store
    failing raises `FactStoreError`.
    """

    codec: HrrCodec | None
    default_trust: float

    def _read(self) -> AbstractContextManager[FactRows]:
        """One read transaction."""
        ...

    def _banks(self) -> AbstractContextManager[FactRows]:
        """The transaction a bank is read and, when stale, rebuilt in."""
        ...

    @property
    def location(self) -> str:
        """Where the facts live, for messages (a file path, or a schema and scope)."""
        ...

    @property
    def vectors_enabled(self) -> bool:
        return self.codec is not None

    def close(self) -> None: ...

    def mark_retrieved(self, fact_ids: Sequence[int]) -> None:
        """Count one more retrieval for each fact (a feedback-like write: no writer order)."""
        if fact_ids:
            with self._write(ordered=False) as txn:
                txn.count_retrievals(fact_ids)

    def get_fact(self, fact_id: int) -> Fact:
        """Raises `FactInputError` for an unknown id."""
        with self._read() as rows:
            return rows.fact(fact_id)

    def count(self) -> int:
        with self._read() as rows:
            return rows.count()

    def list_facts(
        self, *, category: Category | None = None, min_trust: float = 0.0, limit: int = 50
    ) -> list[Fact]:
        """Facts by trust, highest first."""
        with self._read() as rows:
            return rows.select("trust", FactFilter(category, min_trust), limit)

    def recent_facts(
        self, *, category: Category | None = None, min_trust: float = 0.0, limit: int = 500
    ) -> list[Fact]:
        """The most recently updated facts, newest first."""
        with self._read() as rows:
            return rows.select("recent", FactFilter(category, min_trust), limit)

    def fts_candidates(
        self, terms: Sequence[str], *, category: Category | None, min_trust: float, limit: int
    ) -> list[tuple[Fact, float]]:
        """Facts matching any of `terms` in the word index, best first, with a rank whose
        absolute value grows with relevance."""
        if not terms:
            return []
        with self._read() as rows:
            return rows.word_matches(terms, FactFilter(category, min_trust), limit)

    def like_candidates(
        self, terms: Sequence[str], *, category: Category | None, min_trust: float, limit: int
    ) -> list[tuple[Fact, float]]:
        """Facts containing any of `terms` as substrings, with the fraction of terms matched."""
        if not terms:
            return []
        with self._read() as rows:
            found = rows.substring_matches(terms, FactFilter(category, min_trust), limit)
        return [(fact, hits / len(terms)) for fact, hits in found]

    def facts_by_entity(self, name: str, *, min_trust: float = 0.0) -> list[Fact]:
        """Facts linked to the entity called `name` (or with that alias), case-insensitively."""
        with self._read() as rows:
            return rows.by_entity(name.strip(), min_trust)

    def vectors(self, fact_ids: Sequence[int]) -> dict[int, Vector]:
        """The decoded vectors of these facts (facts without a readable vector are left out)."""
        codec = self.codec
        if codec is None or not fact_ids:
            return {}
        with self._read() as rows:
            blobs = rows.vector_blobs(fact_ids)
        out: dict[int, Vector] = {}
        for fact_id, blob in blobs:
            try:
                out[fact_id] = codec.from_bytes(blob)
            except ValueError:
                _log.warning("fact %s has an unreadable vector; it is scored without one", fact_id)
        return out

    def bank(self, category: Category) -> Vector | None:
        """The bundle of every vector in `category` (None without vectors or facts), rebuilt
        here when a write made it stale."""
        codec = self.codec
        if codec is None:
            return None
        with self._banks() as rows:
            cached = rows.cached_bank(category, codec.dim)
            if cached is not None:
                return codec.from_bytes(cached)
            blobs = rows.category_vectors(category, codec.dim)
            if not blobs:
                return None
            vector = codec.bundle_many([codec.from_bytes(b) for b in blobs])
            rows.save_bank(category, codec.to_bytes(vector), codec.dim, len(blobs), self._now())
            return vector
