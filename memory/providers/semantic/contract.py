"""The wall between the semantic provider and where its memories live: `SemanticBackend`.

Two stores sit behind it, side by side: `store.SemanticStore` (one SQLite file per user,
`semantic.db`) and `_pg.PgSemanticStore` (rows of the keel PostgreSQL schema, one scope per
user, embeddings as `real[]`). The provider, the ranker and the learner see only this
protocol. Both keep the same things: the text, a normalized key so the same fact is never
stored twice (`content_key`), where it came from, timestamps, the embedding and the id of
the model that made it, a word index, and a history of every add, update and delete.

The write rules — the same text is one memory, an update may not take another memory's
text, every change is in the history — are written once, in `SemanticWrites`, over a
backend's `SemanticTxn`: a store only opens one write transaction (`_write`), reads rows and
stages changes in it.

Every method blocks; the provider calls them through `anyio.to_thread.run_sync`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

import numpy as np
from numpy.typing import NDArray

from memory.errors import SemanticInputError
from memory.provenance import recall_free

__all__ = [
    "HistoryEvent",
    "HistoryKind",
    "Memory",
    "Origin",
    "SemanticBackend",
    "SemanticRows",
    "SemanticTxn",
    "SemanticWrites",
    "Stamp",
    "content_key",
    "history_from_rows",
    "key_taken",
    "memory_from_row",
    "missing_memory",
    "new_text",
    "replacement_text",
]

Origin: TypeAlias = Literal["extracted", "saved"]
"""`extracted` from a turn by the model, or `saved` verbatim by the `semantic_save` tool."""

_SPACE = re.compile(r"\s+")


def content_key(content: str) -> str:
    """What makes two memories the same: case-folded, whitespace collapsed, end punctuation dropped."""
    return _SPACE.sub(" ", content).strip().rstrip(".!").casefold()


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory (without its embedding)."""

    memory_id: int
    content: str
    origin: Origin
    created_at: float
    updated_at: float
    kind: Literal["semantic_memory"] = "semantic_memory"


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One change to the store, oldest first in `SemanticBackend.history`."""

    memory_id: int
    event: Literal["add", "update", "delete"]
    old_content: str | None
    new_content: str | None
    session_id: str
    kind: Literal["semantic_history"] = "semantic_history"


def memory_from_row(row: Sequence[object]) -> Memory:
    """A memory from the columns `memory_id, content, origin, created_at, updated_at`."""
    origin: Origin = "saved" if row[2] == "saved" else "extracted"
    return Memory(int(str(row[0])), str(row[1]), origin, float(str(row[3])), float(str(row[4])))


def history_from_rows(rows: Sequence[Sequence[object]]) -> list[HistoryEvent]:
    """History events from the columns `memory_id, event, old_content, new_content, session_id`
    (rows come from disk: an unknown event reads as a delete)."""
    out: list[HistoryEvent] = []
    for memory_id, event, old, new, session_id in rows:
        kind: Literal["add", "update", "delete"] = (
            "add" if event == "add" else "update" if event == "update" else "delete"
        )
        out.append(
            HistoryEvent(
                int(str(memory_id)),
                kind,
                None if old is None else str(old),
                None if new is None else str(new),
                str(session_id),
            )
        )
    return out


def new_text(content: str) -> tuple[str, str]:
    """A memory about to be added: its stripped text and its `content_key`.

    Raises:
        SemanticInputError: the text is empty.
    """
    content = recall_free(content).strip()
    if not content:
        raise SemanticInputError(
            "the memory is empty (recalled <memory-context> text is never stored); say what should be remembered"
        )
    return content, content_key(content)


def replacement_text(content: str) -> tuple[str, str]:
    """The new text of an updated memory, stripped, and its `content_key`.

    Raises:
        SemanticInputError: the text is empty (deleting is how a memory goes).
    """
    content = recall_free(content).strip()
    if not content:
        raise SemanticInputError("the new text is empty; delete the memory instead")
    return content, content_key(content)


def key_taken(holder: int, memory_id: int) -> SemanticInputError:
    """The refusal of an update that would make `memory_id` say what memory `holder` says."""
    return SemanticInputError(f"memory {holder} already says that; delete memory {memory_id} instead")


def missing_memory(memory_id: int) -> SemanticInputError:
    return SemanticInputError(f"there is no memory {memory_id}; search or list to find the right id")


HistoryKind: TypeAlias = Literal["add", "update", "delete"]


Stamp: TypeAlias = tuple[int, ...]
"""What a store's embeddings are as of: it changes whenever any writer writes (`matrix`'s cache key)."""


class SemanticRows(Protocol):
    """One transaction of a semantic store as the reads see it: rows in, values out (the
    rules are `SemanticBackend`'s)."""

    def get(self, memory_id: int) -> Memory:
        """The memory `memory_id`; `missing_memory` when there is none."""
        ...

    def get_many(self, memory_ids: Sequence[int]) -> list[Memory]:
        """Those of these memories (at least one id) that exist."""
        ...

    def count(self) -> int: ...

    def recent(self, limit: int) -> list[Memory]:
        """The most recently updated memories first."""
        ...

    def history(self) -> list[HistoryEvent]:
        """Every event, oldest first."""
        ...

    def stale(self, model_id: str) -> list[tuple[int, str]]:
        """(id, text) of memories embedded by another model."""
        ...

    def stamp(self) -> Stamp:
        """What the embeddings are as of (see `Stamp`)."""
        ...

    def embeddings(self, model_id: str) -> tuple[list[int], NDArray[np.float32]]:
        """Ids and the embedding matrix (one row each, by id) of every memory made by `model_id`."""
        ...

    def lexical(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """(id, a positive full-text score, higher better) for memories matching any of `terms`
        (at least one)."""
        ...

    def document_frequency(self, term: str) -> int:
        """How many memories contain `term` (as the word index matches it, stemmed)."""
        ...


class SemanticTxn(SemanticRows, Protocol):
    """One write transaction of a semantic store: the rows the rules read, the changes they
    stage; all of it commits when the block ends, nothing when it raises."""

    def by_key(self, key: str, *, besides: int | None = None) -> Memory | None:
        """The memory whose `content_key` is `key` (other than `besides`), if any."""
        ...

    def insert(
        self, content: str, key: str, origin: Origin, at: float, model_id: str, vector: NDArray[np.float32]
    ) -> int:
        """Add a memory; its new id."""
        ...

    def replace(
        self, memory_id: int, content: str, key: str, at: float, model_id: str, vector: NDArray[np.float32]
    ) -> None:
        """Give a memory new text and a new embedding."""
        ...

    def remove(self, memory_id: int) -> None: ...

    def log(
        self, memory_id: int, event: HistoryKind, old: str | None, new: str | None, session_id: str, at: float
    ) -> None:
        """Append a history event."""
        ...

    def reembed(self, rows: Sequence[tuple[int, NDArray[np.float32]]], model_id: str) -> None:
        """Store new embeddings made by `model_id`."""
        ...


class SemanticWrites(Protocol):
    """`SemanticBackend`'s writes, written once: a store subclasses this and provides `_write`
    (one transaction as a `SemanticTxn`) and `_now` (its clock)."""

    _now: Callable[[], float]

    def _write(self) -> AbstractContextManager[SemanticTxn]:
        """One write transaction."""
        ...

    def add(
        self,
        content: str,
        vector: NDArray[np.float32],
        *,
        model_id: str,
        origin: Origin,
        session_id: str = "",
    ) -> tuple[Memory, bool]:
        """Store a memory; the same text (see `content_key`) returns the existing one and False."""
        content, key = new_text(content)
        with self._write() as txn:
            existing = txn.by_key(key)
            if existing is not None:
                return existing, False
            now = self._now()
            memory_id = txn.insert(content, key, origin, now, model_id, vector)
            txn.log(memory_id, "add", None, content, session_id, now)
            return Memory(memory_id, content, origin, now, now), True

    def update(
        self,
        memory_id: int,
        content: str,
        vector: NDArray[np.float32],
        *,
        model_id: str,
        session_id: str = "",
    ) -> Memory:
        """Replace a memory's text (and embedding); its id and creation time stay."""
        content, key = replacement_text(content)
        with self._write() as txn:
            old = txn.get(memory_id)
            clash = txn.by_key(key, besides=memory_id)
            if clash is not None:
                raise key_taken(clash.memory_id, memory_id)
            now = self._now()
            txn.replace(memory_id, content, key, now, model_id, vector)
            txn.log(memory_id, "update", old.content, content, session_id, now)
            return Memory(memory_id, content, old.origin, old.created_at, now)

    def delete(self, memory_id: int, *, session_id: str = "") -> Memory:
        """Remove a memory; returns what was removed."""
        with self._write() as txn:
            old = txn.get(memory_id)
            txn.remove(memory_id)
            txn.log(memory_id, "delete", old.content, None, session_id, self._now())
            return old


class SemanticBackend(SemanticWrites, Protocol):
    """One user's memories with their embeddings, a word index and a history. The writes —
    `add`, `update`, `delete` — are `SemanticWrites`'; the reads are written here once over
    a store's `SemanticRows`: a store subclasses this and provides `_read` (one read
    transaction) and `_cache` (where `matrix` keeps its last answer).

    An unknown id or empty text raises `SemanticInputError`; the store failing raises
    `SemanticStoreError`.
    """

    _cache: tuple[tuple[Stamp, str], list[int], NDArray[np.float32]] | None

    def _read(self) -> AbstractContextManager[SemanticRows]:
        """One read transaction."""
        ...

    @property
    def location(self) -> str:
        """Where the memories live, for messages (a file path, or a schema and scope)."""
        ...

    def close(self) -> None: ...

    def reembed(self, rows: Sequence[tuple[int, NDArray[np.float32]]], *, model_id: str) -> None:
        """Store new embeddings (after a change of embedding model)."""
        with self._write() as txn:
            txn.reembed(rows, model_id)

    def get(self, memory_id: int) -> Memory:
        with self._read() as rows:
            return rows.get(memory_id)

    def get_many(self, memory_ids: Sequence[int]) -> dict[int, Memory]:
        if not memory_ids:
            return {}
        with self._read() as rows:
            return {m.memory_id: m for m in rows.get_many(memory_ids)}

    def count(self) -> int:
        with self._read() as rows:
            return rows.count()

    def recent(self, *, limit: int) -> list[Memory]:
        """The most recently updated memories first."""
        with self._read() as rows:
            return rows.recent(limit)

    def history(self) -> list[HistoryEvent]:
        with self._read() as rows:
            return rows.history()

    def stale_embeddings(self, model_id: str) -> list[tuple[int, str]]:
        """(id, text) of memories embedded by another model."""
        with self._read() as rows:
            return rows.stale(model_id)

    def matrix(self, model_id: str) -> tuple[list[int], NDArray[np.float32]]:
        """Ids and the embedding matrix (one row each, by id) of every memory made by `model_id`.

        The same matrix object is handed out until something is written, here or by another
        writer (the ranker's hubness index relies on it)."""
        with self._read() as rows:
            key = (rows.stamp(), model_id)
            cached = self._cache
            if cached is not None and cached[0] == key:
                return cached[1], cached[2]
            ids, matrix = rows.embeddings(model_id)
        self._cache = (key, ids, matrix)
        return ids, matrix

    def lexical(self, terms: Sequence[str], *, limit: int) -> list[tuple[int, float]]:
        """(id, a positive full-text score, higher better) for memories matching any of `terms`."""
        if not terms:
            return []
        with self._read() as rows:
            return rows.lexical(terms, limit)

    def document_frequency(self, term: str) -> int:
        """How many memories contain `term` (as the word index matches it, stemmed)."""
        with self._read() as rows:
            return rows.document_frequency(term)
