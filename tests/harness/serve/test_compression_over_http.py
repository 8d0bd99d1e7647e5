"""The conversation id survives compression: a session compressed mid-conversation keeps its
id over HTTP, its turns go on in the child, and the conversation reads back whole."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from harness.testing.processes import KeelServer, keel_server
from tests.harness.serve.conftest import sse_events, turn, write_config

SMALL_WINDOW = {
    "compression": {"flush": "off", "protect_first_n": 0, "protect_last_n": 2},
    "recall": {"enabled": False},
}


@pytest.fixture(scope="module")
def server(model_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeelServer]:
    root = tmp_path_factory.mktemp("serve-compress")
    config = write_config(root / "keel.yaml", model_url, **SMALL_WINDOW)
    text = config.read_text().replace('"tokenizer": "chars"', '"tokenizer": "chars", "context_window": 6000')
    config.write_text(text)
    with keel_server(config, home=root / "home") as s:
        yield s


def test_a_compressed_session_keeps_its_id_and_its_conversation(client: httpx.Client) -> None:
    session = client.post("/v1/sessions").json()["id"]
    kinds: list[str] = []
    said = []
    for i in range(8):
        text = f"turn {i} " + "lorem ipsum dolor " * 40
        said.append(text)
        events = sse_events(client, f"/v1/runs/{turn(client, session, text)}/events")
        assert events[-1][1] == "run.completed", events[-1]
        kinds += [kind for _, kind, _ in events]
    assert "compression.started" in kinds and "compression.completed" in kinds
    data = client.get(f"/v1/sessions/{session}/messages").json()
    assert data["session_id"] == session
    assert [m["content"] for m in data["data"] if m["role"] == "user"] == said
