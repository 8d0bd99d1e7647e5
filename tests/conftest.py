"""Shared test fixtures: an isolated keel home, the data directory, the anyio backend."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """`$KEEL_DATA_DIR`, else `../shared/data` next to the repository."""
    env = os.environ.get("KEEL_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture
def anyio_backend() -> str:
    # `anyio_mode = "auto"` runs every async test on this backend.
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh keel home; `$KEEL_HOME` points at it for code that reads the environment."""
    h = tmp_path / "keel-home"
    h.mkdir()
    monkeypatch.setenv("KEEL_HOME", str(h))
    return h


@pytest.fixture
def locomo_path() -> Path:
    path = data_dir() / "locomo-dev.json"
    if not path.exists():
        pytest.skip(f"LoCoMo data not found at {path}; set KEEL_DATA_DIR to the shared data directory")
    return path
