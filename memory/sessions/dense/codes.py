"""Vectors as bytes, and the in-memory sign-code prefilter that keeps dense search fast.

A 384-dimension MiniLM vector is stored twice, small: as float16 (768 bytes, cosine to the
float32 original above 0.9999) and as its sign bits (48 bytes). A search scores every
stored code against the query's by Hamming distance — six 64-bit XOR-and-popcounts per
message, about 10 ms per million on one core — keeps the `rescore` nearest, reads their
float16 vectors back from the store and ranks those by exact cosine. Below `rescore`
messages the prefilter keeps everything, so small stores are searched exactly.

The codes live in memory (`CodeIndex`: 56 bytes per message with its ids, 56 MB for a
million), loaded once per process and topped up from the store's row ids as the indexer
adds vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memory.sessions.dense.contract import VectorRow

__all__ = ["CodeIndex", "sign_codes", "vector_rows"]


def sign_codes(vectors: NDArray[np.float32]) -> list[bytes]:
    """The packed sign bits of each row."""
    bits = np.packbits(vectors > 0, axis=1)
    return [row.tobytes() for row in bits]


def vector_rows(message_ids: Sequence[int], vectors: NDArray[np.float32]) -> list[VectorRow]:
    """Rows to store for these messages' vectors."""
    codes = sign_codes(vectors)
    return [VectorRow(int(mid), vectors[i], codes[i]) for i, mid in enumerate(message_ids)]


class CodeIndex:
    """Every stored vector's sign code, for the Hamming prefilter (not thread-safe: one search or
    refresh at a time, which the owner's lock ensures).

    The codes are kept word-major — one contiguous array per 64-bit word of the code — so a
    search is six passes of XOR and popcount over contiguous memory, and the `count` nearest
    are found from a histogram of the distances (they are small integers) instead of a
    partial sort: about four times faster than row-major codes with `argpartition`.
    """

    def __init__(self) -> None:
        self._rows = np.zeros(0, dtype=np.int64)
        self._words = np.zeros((0, 0), dtype=np.uint64)
        self._last_row = 0

    @property
    def last_row(self) -> int:
        """The newest store row id loaded."""
        return self._last_row

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    def add(self, rows: Sequence[int], message_ids: Sequence[int], codes: Sequence[bytes]) -> None:
        """Append codes read from the store (row ids increasing)."""
        if not rows:
            return
        words = _as_words(np.frombuffer(b"".join(codes), dtype=np.uint8).reshape(len(codes), -1)).T
        self._words = words.copy() if len(self) == 0 else np.concatenate([self._words, words], axis=1)
        self._rows = np.concatenate([self._rows, np.asarray(rows, dtype=np.int64)])
        self._last_row = int(rows[-1])

    def nearest(self, query_code: bytes, count: int) -> list[int]:
        """The store row ids of the `count` codes closest to `query_code` (all when there are fewer)."""
        n = len(self)
        if n == 0:
            return []
        if n <= count:
            return [int(i) for i in self._rows]
        query = _as_words(np.frombuffer(query_code, dtype=np.uint8)[None, :])[0]
        distance = np.zeros(n, dtype=np.uint16)
        scratch = np.empty(n, dtype=np.uint64)
        bits = np.empty(n, dtype=np.uint8)
        for word, value in zip(self._words, query, strict=True):
            np.bitwise_xor(word, value, out=scratch)
            np.bitwise_count(scratch, out=bits)
            distance += bits
        # The smallest distance d with at least `count` codes at d or closer, by histogram.
        cumulative = np.cumsum(np.bincount(distance))
        limit = int(np.searchsorted(cumulative, count))
        closer = np.flatnonzero(distance < limit)
        tied = np.flatnonzero(distance == limit)[: count - len(closer)]
        return [int(i) for i in self._rows[np.concatenate([closer, tied])]]


def _as_words(raw: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """Rows of code bytes as rows of 64-bit words (zero-padded to a multiple of 8 bytes)."""
    pad = (-raw.shape[1]) % 8
    if pad:
        raw = np.pad(raw, ((0, 0), (0, pad)))
    return np.ascontiguousarray(raw).view(np.uint64)
