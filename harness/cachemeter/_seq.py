"""Packed token sequences: token ids as native uint32 bytes, and a fast common-prefix length.

Simulators compare millions of tokens. Holding ids as `bytes` lets every comparison run in C
(`bytes.__eq__` on slices is a memcmp) and makes a token sequence hashable and cheap to keep.
Token `i` of a packed sequence is `data[4 * i : 4 * i + 4]`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["ITEM", "common_prefix", "pack", "unpack"]

ITEM = 4
"""Bytes per token id."""


def pack(ids: Sequence[int]) -> bytes:
    """Token ids → packed bytes (ids must fit in 32 bits)."""
    return np.asarray(ids, dtype=np.uint32).tobytes()


def unpack(data: bytes) -> list[int]:
    """Packed bytes → token ids."""
    ids: list[int] = np.frombuffer(data, dtype=np.uint32).tolist()
    return ids


def common_prefix(a: bytes, b: bytes, start: int = 0, a_off: int = 0, b_off: int = 0) -> int:
    """Tokens equal in `a` and `b` from absolute token position `start` onward.

    `a` holds tokens from absolute position `a_off` on, `b` from `b_off` on (a radix-tree edge
    keeps only its own slice of a sequence). Returns the count of equal tokens, so the first
    difference (or the end of the shorter one) is at `start + result`.
    """
    i = ITEM * (start - a_off)
    j = ITEM * (start - b_off)
    count = min(len(a) - i, len(b) - j) // ITEM
    if count <= 0:
        return 0
    size = ITEM * count
    if a[i : i + size] == b[j : j + size]:
        return count
    x = np.frombuffer(a, dtype=np.uint32, count=count, offset=i)
    y = np.frombuffer(b, dtype=np.uint32, count=count, offset=j)
    return int(np.argmax(x != y))
