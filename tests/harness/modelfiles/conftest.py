"""Fixtures for model-file tests: a Hugging Face tokenizer directory trained here (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cachemeter.meterkit import build_bpe


@pytest.fixture(scope="session")
def bpe_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A locally trained Hugging Face tokenizer directory with a ChatML chat template."""
    return build_bpe(tmp_path_factory.mktemp("bpe") / "tiny-bpe")
