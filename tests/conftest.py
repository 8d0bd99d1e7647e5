"""Shared test fixtures: an isolated keel home, the data directory, the anyio backend, PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
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


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's tests assemble the built-in models' weights (once, shared by all)."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture
def locomo_path() -> Path:
    path = data_dir() / "locomo-dev.json"
    if not path.exists():
        pytest.skip(f"LoCoMo data not found at {path}; set KEEL_DATA_DIR to the shared data directory")
    return path


DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """`$KEEL_TEST_POSTGRES_URL` (default: trust auth on 127.0.0.1:5432, database `test`).

    Where no server answers the tests using it skip with the reason, unless
    `KEEL_TEST_REQUIRE_POSTGRES=1` (set by `.ci/run`), where they fail instead.
    """
    url = os.environ.get("KEEL_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        reason = f"no PostgreSQL server answers at {url!r} ({str(exc).strip().splitlines()[0]}); set KEEL_TEST_POSTGRES_URL"
        if os.environ.get("KEEL_TEST_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"KEEL_TEST_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return url


def _fresh_schema(postgres_url: str, prefix: str) -> Iterator[str]:
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(postgres_url, autocommit=True, options="-c client_min_messages=warning") as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def pg_schema(postgres_url: str) -> Iterator[str]:
    """A fresh schema name for one test; the schema (if the test made it) is dropped afterwards."""
    yield from _fresh_schema(postgres_url, "keel_test")


@pytest.fixture
def sessions_schema(postgres_url: str) -> Iterator[str]:
    """A fresh schema for the storage tests (named `sessions_*`), dropped afterwards."""
    yield from _fresh_schema(postgres_url, "sessions")


def on_postgres(url: str, schema: str) -> dict[str, str]:
    """`config()` overrides that put every store in `schema` at `url` (`storage.backend: postgres`)."""
    return {"storage__backend": "postgres", "storage__url": url, "storage__pg_schema": schema}
