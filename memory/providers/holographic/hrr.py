"""Holographic reduced representations with phase vectors (needs numpy).

A vector is `dim` angles in [0, 2π). Binding two vectors adds their angles, unbinding
subtracts them, bundling takes the circular mean (the angle of the sum of unit phasors),
and similarity is the mean cosine of the angle differences: 1 for identical vectors, about
0 (± 1/√(2·dim)) for unrelated ones. Phases never shrink under repeated binding, so no
renormalisation drifts, and the algebra is plain modular addition — identical on every
platform and numpy version.

Atoms are deterministic: the angles of word `w` come from SHA-256 of `"w:0"`, `"w:1"`, ...,
each digest read as 16 little-endian uint16 values scaled to [0, 2π). The same word gives
the same vector in every process and on every machine, which is what lets stored vectors
be recomputed or compared later.

Unbinding distributes over a bundle exactly (subtracting a constant phase rotates the sum),
so `unbind(encode_fact(c, es), ROLE_CONTENT)` is a bundle of the content vector with noise,
and `similarity(fact, bind(atom(e), ROLE_ENTITY))` is high exactly when entity `e` is one of
the fact's bundled members.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from memory.providers._text import words

__all__ = [
    "DEFAULT_DIM",
    "ROLE_CONTENT",
    "ROLE_ENTITY",
    "HrrCodec",
    "Vector",
    "atom",
    "bind",
    "bundle",
    "encode_fact",
    "encode_text",
    "from_bytes",
    "similarities",
    "similarity",
    "snr",
    "to_bytes",
    "unbind",
]

_log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float64]

DEFAULT_DIM = 1024
ROLE_CONTENT = "__hrr_role_content__"
ROLE_ENTITY = "__hrr_role_entity__"
_EMPTY = "__hrr_empty__"
_TWO_PI = 2.0 * math.pi
_MAGIC = b"HRR1"


@lru_cache(maxsize=4096)
def _atom(word: str, dim: int) -> Vector:
    blocks = -(-dim // 16)  # 16 uint16 values per SHA-256 digest
    digest = b"".join(hashlib.sha256(f"{word}:{i}".encode()).digest() for i in range(blocks))
    values = np.frombuffer(digest, dtype="<u2")[:dim].astype(np.float64)
    vector = values * (_TWO_PI / 65536.0)
    vector.flags.writeable = False  # cached and shared: nobody may mutate it
    return vector


def atom(word: str, dim: int = DEFAULT_DIM) -> Vector:
    """The deterministic phase vector of `word` (read-only; cached, 4,096 most recent)."""
    if dim < 1:
        raise ValueError(f"HRR dimension must be positive, got {dim!r}")
    return _atom(word, dim)


def bind(a: Vector, b: Vector) -> Vector:
    """Associate two vectors: (a + b) mod 2π."""
    return np.mod(a + b, _TWO_PI)


def unbind(memory: Vector, key: Vector) -> Vector:
    """Undo `bind` with `key`: (memory − key) mod 2π."""
    return np.mod(memory - key, _TWO_PI)


def bundle(*vectors: Vector) -> Vector:
    """Superpose vectors: the angle of the sum of their unit phasors, mod 2π."""
    if not vectors:
        raise ValueError("bundle needs at least one vector")
    total = np.exp(1j * np.stack(vectors)).sum(axis=0)
    angles: Vector = np.mod(np.angle(total), _TWO_PI)
    return angles


def similarity(a: Vector, b: Vector) -> float:
    """Mean cosine of the angle differences, in [−1, 1]; ≈ 0 for unrelated vectors."""
    return float(np.mean(np.cos(a - b)))


def similarities(matrix: Vector, v: Vector) -> Vector:
    """`similarity` of each row of `matrix` with `v`."""
    result: Vector = np.cos(matrix - v).mean(axis=1)
    return result


def snr(dim: int, items: int) -> float:
    """The signal-to-noise ratio of a bundle of `items` vectors: √(dim / items)."""
    return math.sqrt(dim / max(items, 1))


def encode_text(text: str, dim: int = DEFAULT_DIM) -> Vector:
    """The bundle of the atoms of the text's words (`_text.words`); empty text has its own atom."""
    tokens = words(text)
    if not tokens:
        return atom(_EMPTY, dim)
    return bundle(*(atom(t, dim) for t in tokens))


def encode_fact(content: str, entities: Sequence[str], dim: int = DEFAULT_DIM) -> Vector:
    """bundle(bind(text, ROLE_CONTENT), bind(atom(entity), ROLE_ENTITY) for each entity).

    Entities are lower-cased, so `probe("Alice")` finds a fact that named "alice".
    """
    parts = [bind(encode_text(content, dim), atom(ROLE_CONTENT, dim))]
    role_entity = atom(ROLE_ENTITY, dim)
    parts.extend(bind(atom(entity.lower(), dim), role_entity) for entity in entities)
    return bundle(*parts)


def to_bytes(vector: Vector) -> bytes:
    """`b"HRR1"` + little-endian float32 angles (raw float64 at dim 1, where the two
    encodings would have the same length)."""
    if vector.shape[0] == 1:
        return vector.astype("<f8").tobytes()
    return _MAGIC + vector.astype("<f4").tobytes()


def from_bytes(blob: bytes, dim: int) -> Vector:
    """Decode `to_bytes` output (or a legacy raw float64 array) of dimension `dim`.

    Raises:
        ValueError: the blob does not hold a vector of that dimension.
    """
    if dim == 1 and len(blob) == 8:
        return np.frombuffer(blob, dtype="<f8").astype(np.float64)
    if blob[:4] == _MAGIC and len(blob) == 4 + 4 * dim:
        return np.frombuffer(blob, dtype="<f4", offset=4).astype(np.float64)
    if len(blob) == 8 * dim:
        return np.frombuffer(blob, dtype="<f8").astype(np.float64)
    raise ValueError(f"stored HRR vector has {len(blob)} bytes, which is not a {dim}-dimensional vector")


class HrrCodec:
    """The HRR operations at one dimension, as the fact store and retrieval use them.

    Args:
        dim: the number of angles per vector.
    """

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 1:
            raise ValueError(f"HRR dimension must be positive, got {dim!r}")
        self.dim = dim

    @property
    def role_content(self) -> Vector:
        return atom(ROLE_CONTENT, self.dim)

    @property
    def role_entity(self) -> Vector:
        return atom(ROLE_ENTITY, self.dim)

    def atom(self, word: str) -> Vector:
        return atom(word, self.dim)

    def encode_text(self, text: str) -> Vector:
        return encode_text(text, self.dim)

    def encode_fact(self, content: str, entities: Sequence[str]) -> Vector:
        return encode_fact(content, entities, self.dim)

    def entity_key(self, entity: str) -> Vector:
        """What a fact naming `entity` has bundled in: bind(atom(entity), ROLE_ENTITY)."""
        return bind(atom(entity.strip().lower(), self.dim), self.role_entity)

    def bundle_many(self, vectors: Sequence[Vector]) -> Vector:
        """`bundle` that warns (log) when the bundle is too crowded to read back reliably."""
        if snr(self.dim, len(vectors)) < 2.0:
            _log.warning(
                "bundling %d vectors at dim %d: SNR below 2, members blur together", len(vectors), self.dim
            )
        return bundle(*vectors)

    def similarity(self, a: Vector, b: Vector) -> float:
        return similarity(a, b)

    def similarities(self, matrix: Vector, v: Vector) -> list[float]:
        """`similarity` of each row of `matrix` with `v`, as plain floats."""
        values: list[float] = similarities(matrix, v).tolist()
        return values

    def stack(self, vectors: Sequence[Vector]) -> Vector:
        """Vectors as the rows of one matrix (for the batch operations)."""
        matrix: Vector = np.stack(vectors)
        return matrix

    def unbind(self, memory: Vector, key: Vector) -> Vector:
        return unbind(memory, key)

    def to_bytes(self, vector: Vector) -> bytes:
        return to_bytes(vector)

    def from_bytes(self, blob: bytes) -> Vector:
        return from_bytes(blob, self.dim)
