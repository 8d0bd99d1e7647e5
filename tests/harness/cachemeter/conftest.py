"""Fixtures for meter tests: real keel traces, and a Hugging Face tokenizer trained here.

`keel_traces`: real keel traces for the lint and the contract, a short synthetic session, offline.

The built-in synthetic scenario, cut to 30 turns with a forced compression at turn 20, is
played by its scripted replies through real sessions (real memory store, real trace writer)
once per snapshot policy. Built once per test session: about a second each.

`bpe_dir`: a byte-level BPE trained on a few sentences and saved as a tokenizer directory with
a ChatML chat template (`meterkit.build_bpe`); nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness.config import load_config
from harness.experiments import apply_overrides, run_scenario, synthetic_200
from tests.harness.cachemeter.meterkit import build_bpe


async def _play(root: Path) -> dict[str, Path]:
    scenario = synthetic_200(turns=30, compress_at=20)
    traces: dict[str, Path] = {}
    for policy in ("frozen", "invalidate_on_write", "live"):
        config = apply_overrides(load_config(None, environ={}), {"memory": {"snapshot_policy": policy}})
        result = await run_scenario(scenario, config, home=root / policy, label=policy)
        traces[policy] = result.trace_path
    return traces


@pytest.fixture(scope="session")
def keel_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Trace files of one short session per snapshot policy: frozen, invalidate_on_write, live."""
    root = tmp_path_factory.mktemp("keel-traces")
    return anyio.run(_play, root)


@pytest.fixture(scope="session")
def bpe_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A locally trained Hugging Face tokenizer directory with a ChatML chat template."""
    return build_bpe(tmp_path_factory.mktemp("bpe") / "tiny-bpe")
