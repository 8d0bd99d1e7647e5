"""Each package's exception tree is complete and drawn in one docstring."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import harness.errors
import memory.errors


def _import_everything(root: str) -> None:
    package = importlib.import_module(root)
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{root}."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)


def _subclasses(cls: type[BaseException]) -> set[type[BaseException]]:
    out: set[type[BaseException]] = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _subclasses(sub)
    return out


@pytest.mark.parametrize(
    ("root", "base", "drawn_in"),
    [
        ("harness", harness.errors.KeelError, harness.errors),
        ("memory", memory.errors.MemoryLayerError, memory.errors),
    ],
)
def test_every_error_class_is_drawn_in_the_tree_docstring(
    root: str, base: type[BaseException], drawn_in: types.ModuleType
) -> None:
    _import_everything(root)
    doc = drawn_in.__doc__ or ""
    ours = {c for c in _subclasses(base) if c.__module__.split(".")[0] in ("harness", "memory")}
    assert len(ours) > 5, "the walk found too few classes to prove anything"
    missing = sorted(c.__qualname__ for c in ours if c.__qualname__ not in doc)
    assert missing == [], f"add these to the tree in {drawn_in.__name__}'s docstring"


@pytest.mark.parametrize(
    ("base", "module"),
    [(harness.errors.KeelError, "harness.errors"), (memory.errors.MemoryLayerError, "memory.errors")],
)
def test_every_error_class_is_defined_in_its_packages_errors_module(
    base: type[BaseException], module: str
) -> None:
    _import_everything(module.split(".")[0])
    elsewhere = sorted(
        f"{c.__module__}.{c.__qualname__}"
        for c in _subclasses(base)
        if c.__module__.split(".")[0] in ("harness", "memory") and c.__module__ != module
    )
    assert elsewhere == []
