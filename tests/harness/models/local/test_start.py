"""The embedded-model launcher's errors, without starting a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import LocalModelError
from harness.models.local import start_local_model
from harness.models.local._start import free_port


async def test_a_missing_gguf_fails_before_any_process_starts(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match=r"model.gguf .*does not exist; check the path"):
        async with start_local_model(gguf=tmp_path / "absent.gguf", models_dir=tmp_path):
            pass


async def test_a_gguf_that_fails_its_pin_is_never_started(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF not really a model")
    with pytest.raises(LocalModelError, match=r"does not match model\.gguf_sha256"):
        async with start_local_model(gguf=path, gguf_sha256="0" * 64, models_dir=tmp_path):
            pass


def test_free_port_is_a_loopback_port_number() -> None:
    assert 1024 <= free_port() <= 65535
