"""session_search.dense as a session builds it: on with the embedder, off without it, indexed in the background."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from harness.errors import ConfigError
from harness.events import ToolResultReady
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from harness.wiring.dense import dense_choice
from memory import StoredMessage, open_session_db
from memory.providers.semantic import MiniLmEmbedder
from memory.sessions import open_vectors

T0 = 1_700_000_000.0


def options(model: ScriptedModel, home: Path) -> SessionOptions:
    return SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())


def test_the_choice_follows_the_config_and_the_installed_embedder() -> None:
    # Off unless asked; the dev install has the semantic extra, so auto means on.
    assert not dense_choice(config()).on
    assert dense_choice(config(session_search__dense="auto")).on
    assert not dense_choice(config(session_search__dense="off")).on
    assert "off" in dense_choice(config(session_search__dense="off")).reason


def test_dense_on_without_the_embedder_refuses_with_the_install_hint() -> None:
    def missing() -> str:
        return "install it with pip"

    with pytest.raises(ConfigError, match="install it with pip"):
        dense_choice(config(session_search__dense="on"), unavailable=missing)
    choice = dense_choice(config(session_search__dense="auto"), unavailable=missing)
    assert not choice.on
    assert "install it with pip" in choice.reason


async def test_a_session_indexes_its_store_in_the_background_and_searches_by_meaning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with open_session_db(home / "state.db") as db:
        await db.create_session("old", source="cli", started_at=T0)
        await db.append_message(
            "old", StoredMessage(role="user", content="We adopted a golden retriever puppy", timestamp=T0 + 1)
        )
    cfg = config(session_search__dense="auto", session_search__dense_interval_s="0.05")
    model = ScriptedModel(
        [say("noted"), call_tool("session_search", {"query": "which dog breed"}), say("ok")]
    )
    async with open_session(cfg, options(model, home)) as session:
        await run_turn(session, "hello")
        async with open_session_db(home / "state.db") as db:
            vectors = open_vectors(db)
            assert vectors is not None
            await vectors.prepare(MiniLmEmbedder.model_id)  # the same model: changes nothing
            try:
                for _ in range(1200):  # another connection writes them: poll, at most a minute
                    if (await vectors.counts())[0] >= 3:  # the old message and this turn's two
                        break
                    await anyio.sleep(0.05)
                assert (await vectors.counts())[0] >= 3
            finally:
                await vectors.aclose()
        events = await run_turn(session, "what dog did we get?")
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert results
    reply = json.loads(results[0].content)
    assert [r["session_id"] for r in reply["results"]] == ["old"]
