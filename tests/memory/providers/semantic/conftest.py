"""Fixtures for the semantic provider: the real embedder (or a clear skip) and a started provider."""

from __future__ import annotations

import os

import pytest

from memory.providers.semantic import MiniLmEmbedder, embedder_unavailable_reason

_REASON = embedder_unavailable_reason()

needs_embedder = pytest.mark.skipif(
    _REASON is not None and not os.environ.get("CI"),
    reason=f"the local embedder is not installed ({_REASON}); CI installs it",
)
"""For tests of meaning: they need the real model. In CI (`CI` set) they never skip."""


@pytest.fixture(scope="session")
def minilm() -> MiniLmEmbedder:
    return MiniLmEmbedder()
