"""Phase-vector HRR: the algebra, deterministic atoms, serialization."""

from __future__ import annotations

import hashlib
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory.providers.holographic import hrr

REPO = Path(__file__).resolve().parents[4]


def test_unbinding_a_binding_recovers_the_vector() -> None:
    a, b = hrr.atom("alice"), hrr.atom("works_at")
    assert hrr.similarity(hrr.unbind(hrr.bind(a, b), b), a) > 0.99


def test_a_binding_resembles_neither_of_its_parts() -> None:
    a, b = hrr.atom("alice"), hrr.atom("works_at")
    bound = hrr.bind(a, b)
    assert abs(hrr.similarity(bound, a)) < 0.1
    assert abs(hrr.similarity(bound, b)) < 0.1


def test_a_bundle_stays_similar_to_each_member_and_not_to_a_stranger() -> None:
    members = [hrr.atom(w) for w in ("red", "green", "blue", "yellow")]
    bundled = hrr.bundle(*members)
    for member in members:
        assert hrr.similarity(bundled, member) > 0.3
    assert abs(hrr.similarity(bundled, hrr.atom("submarine"))) < 0.1


def test_similarity_is_one_for_identical_and_near_zero_for_unrelated_atoms() -> None:
    assert hrr.similarity(hrr.atom("x"), hrr.atom("x")) == pytest.approx(1.0)
    assert abs(hrr.similarity(hrr.atom("x"), hrr.atom("y"))) < 0.1


def test_atoms_follow_the_sha256_little_endian_recipe() -> None:
    # Re-derive the first block independently: SHA-256 of "word:0" as 16 LE uint16 values.
    digest = hashlib.sha256(b"garden:0").digest()
    expected = [v * 2 * math.pi / 65536 for v in struct.unpack("<16H", digest)]
    vector = hrr.atom("garden", 64)
    assert vector.shape == (64,)
    assert vector[:16].tolist() == pytest.approx(expected)
    second = [v * 2 * math.pi / 65536 for v in struct.unpack("<16H", hashlib.sha256(b"garden:1").digest())]
    assert vector[16:32].tolist() == pytest.approx(second)
    assert ((vector >= 0) & (vector < 2 * math.pi)).all()


def test_atoms_are_read_only_so_the_cache_cannot_be_corrupted() -> None:
    with pytest.raises(ValueError, match="read-only"):
        hrr.atom("frozen")[0] = 1.0


def test_atoms_are_identical_in_another_process() -> None:
    code = (
        "import sys; from memory.providers.holographic import hrr; "
        "sys.stdout.write(hrr.atom('determinism', 1024).tobytes().hex())"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=REPO
    )
    assert bytes.fromhex(out.stdout) == hrr.atom("determinism", 1024).tobytes()


def test_text_encoding_ignores_case_and_surrounding_punctuation() -> None:
    a = hrr.encode_text("Alice likes tea.")
    b = hrr.encode_text("alice LIKES 'tea'")
    assert hrr.similarity(a, b) == pytest.approx(1.0)
    assert hrr.similarity(hrr.encode_text(""), hrr.encode_text("   ")) == pytest.approx(1.0)
    assert abs(hrr.similarity(hrr.encode_text(""), a)) < 0.1


def test_a_fact_vector_contains_its_role_bound_entities_and_content() -> None:
    fact = hrr.encode_fact("Alice Smith leads project Atlas", ["Alice Smith", "Atlas"])
    role_entity, role_content = hrr.atom(hrr.ROLE_ENTITY), hrr.atom(hrr.ROLE_CONTENT)
    assert hrr.similarity(fact, hrr.bind(hrr.atom("alice smith"), role_entity)) > 0.3
    assert hrr.similarity(fact, hrr.bind(hrr.atom("atlas"), role_entity)) > 0.3
    assert abs(hrr.similarity(fact, hrr.bind(hrr.atom("bob"), role_entity))) < 0.1
    content = hrr.unbind(fact, role_content)
    assert hrr.similarity(content, hrr.encode_text("Alice Smith leads project Atlas")) > 0.3


def test_serialization_round_trips_through_float32() -> None:
    vector = hrr.encode_text("round trip")
    blob = hrr.to_bytes(vector)
    assert blob[:4] == b"HRR1"
    assert len(blob) == 4 + 4 * 1024
    assert hrr.similarity(hrr.from_bytes(blob, 1024), vector) > 0.9999


def test_legacy_float64_blobs_are_read_and_dimension_one_uses_them() -> None:
    vector = hrr.atom("legacy", 8)
    assert np.array_equal(hrr.from_bytes(vector.astype("<f8").tobytes(), 8), vector)
    one = hrr.atom("tiny", 1)
    assert len(hrr.to_bytes(one)) == 8
    assert np.array_equal(hrr.from_bytes(hrr.to_bytes(one), 1), one)


def test_a_blob_of_the_wrong_size_is_refused() -> None:
    with pytest.raises(ValueError, match="not a 1024-dimensional vector"):
        hrr.from_bytes(b"HRR1" + b"\x00" * 12, 1024)


def test_snr_follows_the_square_root_rule() -> None:
    assert hrr.snr(1024, 256) == pytest.approx(2.0)
    assert hrr.snr(1024, 16) == pytest.approx(8.0)
