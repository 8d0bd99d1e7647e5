"""Each package's `__all__` lists exactly its public names."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = [
    "harness",
    "harness.models",
    "harness.cli",
    "harness.cachemeter",
    "harness.experiments",
    "harness.testing",
    "memory",
    "memory.providers.holographic",
    "memory.skills",
    "prompts",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(module.__all__) == public
    assert len(module.__all__) == len(set(module.__all__)), "a name is listed twice"
