"""`DenseIndex`: message embeddings kept beside the messages, filled in the background, searched by meaning.

Writing a message never embeds it: the turn's write stays as fast as before. The indexer
(`catch_up`, or `run` in a session's task group) reads the messages that have no vector
yet, oldest first, embeds them `batch` at a time in a worker thread and stores the batch
in one transaction. It is resumable by construction — "no vector yet" is the state — so
`keel sessions reindex` on an existing store, a crash half-way, or two processes indexing
the same store all end with one vector per message.

`nearest` embeds the query (about 5 ms), tops up the in-memory sign codes from the
store, keeps the `rescore` closest codes, and ranks those messages by exact cosine. The
codes are loaded once per process (a million take seconds): the background indexer loads
them after its first pass, so a session's first search rarely pays for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.to_thread
import numpy as np

from memory.errors import EmbedderError, SessionStoreError
from memory.sessions.dense.codes import CodeIndex, sign_codes, vector_rows
from memory.sessions.dense.contract import CandidateRow, TextEmbedder, VectorStore

__all__ = ["DenseHit", "DenseIndex", "DenseStatus", "Progress"]

Progress = Callable[[int, int], None]
"""`(embedded so far, total embeddable)`: called after each stored batch."""


@dataclass(frozen=True, slots=True)
class DenseHit:
    """A message close in meaning to the query (`score`: cosine similarity, -1 to 1)."""

    row: CandidateRow
    score: float


@dataclass(frozen=True, slots=True)
class DenseStatus:
    """What `--explain` says about the index."""

    model: str
    kind: str
    embedded: int
    total: int


class DenseIndex:
    """One store's message vectors and the embedder that makes them.

    Args:
        store: the backend's vector table (`open_vectors(session_store)`).
        embedder: the sentence embedder (the semantic extra's MiniLM).
        batch: messages embedded per worker-thread call and stored per transaction.
        rescore: messages ranked by exact cosine after the sign-code prefilter.
    """

    def __init__(
        self, store: VectorStore, embedder: TextEmbedder, *, batch: int = 64, rescore: int = 1000
    ) -> None:
        if batch < 1 or rescore < 1:
            raise ValueError(f"batch and rescore must be at least 1, got {batch!r} and {rescore!r}")
        self._store = store
        self._embedder = embedder
        self._batch = batch
        self._rescore = rescore
        self._codes = CodeIndex()
        self._code_lock = anyio.Lock()
        self._index_lock = anyio.Lock()
        self._embed_limiter = anyio.CapacityLimiter(1)
        self._prepared = False
        self._cursor = 0
        self.failure: str | None = None
        """Why the background indexer last failed (None: it did not)."""

    @property
    def store(self) -> VectorStore:
        """The vector table."""
        return self._store

    async def prepare(self) -> None:
        """Create the table (once per process); empty it if another model wrote it."""
        if not self._prepared:
            await self._store.prepare(self._embedder.model_id)
            self._prepared = True

    async def _embed(self, texts: Sequence[str]) -> np.ndarray[tuple[int, int], np.dtype[np.float32]]:
        vectors = await anyio.to_thread.run_sync(
            self._embedder.embed, list(texts), limiter=self._embed_limiter
        )
        return np.asarray(vectors, dtype=np.float32)

    async def catch_up(self, *, progress: Progress | None = None, limit: int | None = None) -> int:
        """Embed every message that has none yet (at most `limit`); return how many were embedded."""
        await self.prepare()
        done = 0
        async with self._index_lock:
            embedded, total = await self._store.counts() if progress is not None else (0, 0)
            while limit is None or done < limit:
                size = self._batch if limit is None else min(self._batch, limit - done)
                pending = await self._store.pending(after=self._cursor, limit=size)
                if not pending:
                    break
                vectors = await self._embed([p.text for p in pending])
                await self._store.put(vector_rows([p.message_id for p in pending], vectors))
                self._cursor = pending[-1].message_id
                done += len(pending)
                if progress is not None:
                    progress(min(embedded + done, total), total)
        return done

    async def run(self, *, interval_s: float) -> None:
        """Index new messages every `interval_s` seconds until cancelled (a session's background task).

        Never raises for the index's own failures, which must not end the session: a store
        error (busy, a dropped connection) is retried on the next pass; an embedder error
        (a missing or altered model file) stops indexing, kept in `failure`.
        """
        while True:
            # Sleep first: a short session (a test, a one-shot command) never pays for indexing.
            await anyio.sleep(interval_s)
            try:
                await self.catch_up()
                await self._refresh_codes()  # the session's first search need not load them
            except SessionStoreError as exc:
                self.failure = f"indexing will be retried: {exc}"
            except EmbedderError as exc:
                self.failure = f"indexing stopped: {exc}"
                return
            else:
                self.failure = None

    async def _load_codes(self) -> None:
        """Top up the in-memory codes from the store (the caller holds `_code_lock`)."""
        rows, ids, codes = await self._store.codes_since(self._codes.last_row)
        self._codes.add(rows, ids, codes)

    async def _refresh_codes(self) -> None:
        async with self._code_lock:
            await self._load_codes()

    async def status(self) -> DenseStatus:
        """The model, the storage, and how many messages have a vector."""
        await self.prepare()
        embedded, total = await self._store.counts()
        return DenseStatus(self._embedder.model_id, self._store.kind, embedded, total)

    async def nearest(self, query: str, *, k: int, user_ids: Sequence[str] | None = None) -> list[DenseHit]:
        """The `k` messages closest in meaning to `query`, best first (only `user_ids`' sessions)."""
        await self.prepare()
        vector = (await self._embed([query]))[0]
        async with self._code_lock:
            await self._load_codes()
            picked = self._codes.nearest(sign_codes(vector[None, :])[0], max(self._rescore, k))
        candidates = await self._store.candidates(picked, user_ids=user_ids)
        if not candidates:
            return []
        matrix = np.stack([c.vector for c in candidates])
        scores = matrix @ vector
        order = np.argsort(-scores, kind="stable")[:k]
        return [DenseHit(candidates[i], float(scores[i])) for i in order if math.isfinite(scores[i])]

    async def aclose(self) -> None:
        """Close the vector table's connection."""
        await self._store.aclose()
