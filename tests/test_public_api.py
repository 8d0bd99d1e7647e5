"""Every package's `__all__` lists exactly its public names (packages found by walking the tree)."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import harness

ROOTS = ("harness", "memory", "prompts")


def _packages() -> list[str]:
    found: list[str] = []
    for root in ROOTS:
        found.append(root)
        module = importlib.import_module(root)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{root}."):
            if info.ispkg and not any(part.startswith("_") for part in info.name.split(".")):
                found.append(info.name)
    return sorted(found)


PACKAGES = _packages()


def test_the_walk_finds_the_layers_subpackages() -> None:
    # a guard on the walk itself: if it found nothing below the roots, the test below proves little
    for expected in (
        "harness.loop",
        "harness.wiring",
        "harness.config",
        "harness.compress",
        "harness.testing",
        "memory.curated",
        "memory.sessions",
    ):
        assert expected in PACKAGES


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} has no __all__; list its public names"
    for attr in module.__all__:  # a lazy façade (`harness._lazy`) binds a name on first use
        getattr(module, attr)
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(module.__all__) == public
    assert len(module.__all__) == len(set(module.__all__)), "a name is listed twice"


def test_a_public_name_means_one_thing_across_the_packages() -> None:
    # Two public classes with the same name (e.g. a model-stream `TextDelta` beside the turn
    # event `TextDelta`) would make `from harness import X` depend on which package you ask.
    meaning: dict[str, set[int]] = {}
    owners: dict[str, set[str]] = {}
    for name in PACKAGES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            value = getattr(module, attr)
            if isinstance(value, type) or callable(value):
                meaning.setdefault(attr, set()).add(id(value))
                owners.setdefault(attr, set()).add(name)
    clashes = {attr: sorted(owners[attr]) for attr, ids in meaning.items() if len(ids) > 1}
    assert clashes == {}


def test_harness_exports_the_event_union_and_its_adapter() -> None:
    event = harness.EVENT_ADAPTER.validate_python({"kind": "text", "text": "hi"})
    assert isinstance(event, harness.TextDelta)
    assert harness.TextDelta.__name__ != harness.ModelTextDelta.__name__
