"""The dense index's walls: what embeds (`TextEmbedder`), what stores vectors (`VectorStore`).

Message vectors are derived data, like the full-text indexes: every row can be recomputed
from `messages`. Each backend keeps them in a table beside its messages
(`message_vectors`: the message id, its vector and the vector's 48-byte sign code), written
in batches by the indexer, never by the write that stores the message.

Only the conversation is embedded — `user` and `assistant` messages with text — which is
what `session_search` searches by default; tool outputs stay lexical.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

from memory.sessions._records import StoredRole

if TYPE_CHECKING:  # numpy loads with the embedder and the index, not with the session store
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["EMBEDDED_ROLES", "CandidateRow", "PendingMessage", "TextEmbedder", "VectorRow", "VectorStore"]

EMBEDDED_ROLES: tuple[StoredRole, ...] = ("user", "assistant")
"""The roles whose messages get a vector (session_search's default roles)."""


class TextEmbedder(Protocol):
    """Turns texts into unit-length float32 rows (`memory.providers.semantic.Embedder` fits).

    Synchronous and CPU-bound: the indexer runs it in a worker thread.
    """

    @property
    def model_id(self) -> str:
        """Names the model; vectors of different models are never compared."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One L2-normalized float32 row per text."""
        ...


@dataclass(frozen=True, slots=True)
class PendingMessage:
    """A message that has no vector yet."""

    message_id: int
    text: str


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One message's vector to store, with its packed sign bits (the prefilter's code)."""

    message_id: int
    vector: NDArray[np.float32] = field(repr=False)
    code: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """A message the prefilter proposed, with what a search hit needs and its stored vector."""

    message_id: int
    session_id: str
    seq: int
    role: StoredRole
    timestamp: float
    vector: NDArray[np.float32] = field(repr=False)

    @classmethod
    def from_row(cls, row: Sequence[object], vector: NDArray[np.float32]) -> CandidateRow:
        """From `id, session_id, seq, role, timestamp, ...` and the decoded vector."""
        return cls(
            int(cast(int, row[0])),
            str(row[1]),
            int(cast(int, row[2])),
            cast(StoredRole, str(row[3])),
            float(cast(float, row[4])),
            vector,
        )


class VectorStore(Protocol):
    """A backend's `message_vectors` table (`SqliteVectors`, `PgVectors`)."""

    @property
    def kind(self) -> str:
        """How vectors are kept and compared, for `--explain` (e.g. `float16 blobs + numpy`)."""
        ...

    async def prepare(self, model_id: str) -> None:
        """Create the table if missing; drop every vector if they came from another model."""
        ...

    async def pending(self, *, after: int, limit: int) -> list[PendingMessage]:
        """Up to `limit` embeddable messages with id > `after` and no vector, oldest first."""
        ...

    async def put(self, rows: Sequence[VectorRow]) -> None:
        """Store vectors (one transaction); a message deleted meanwhile is skipped."""
        ...

    async def codes_since(self, after: int) -> tuple[list[int], list[int], list[bytes]]:
        """(row ids, message ids, codes) of the vectors stored after row id `after`, in row order."""
        ...

    async def candidates(self, rows: Sequence[int], *, user_ids: Sequence[str] | None) -> list[CandidateRow]:
        """The vectors stored in these rows (`codes_since`'s row ids) whose message still exists,
        only in `user_ids`' sessions (None: everyone's)."""
        ...

    async def counts(self) -> tuple[int, int]:
        """(messages with a vector, messages that should have one)."""
        ...

    async def aclose(self) -> None:
        """Release the connection."""
        ...
