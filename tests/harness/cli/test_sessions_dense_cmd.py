"""`keel sessions reindex` and `keel sessions search --explain` on a real state.db with the real embedder."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness.cli import main
from memory import StoredMessage, open_session_db

T0 = 1_700_000_000.0


def seed(home: Path) -> None:
    async def write() -> None:
        async with open_session_db(home / "state.db") as db:
            await db.create_session("pets", source="cli", started_at=T0)
            await db.append_messages(
                "pets",
                [
                    StoredMessage(
                        role="user", content="We adopted a golden retriever puppy", timestamp=T0 + 1
                    ),
                    StoredMessage(role="assistant", content="Lovely! What is his name?", timestamp=T0 + 2),
                ],
            )
            await db.create_session("deploy", source="cli", started_at=T0 + 10)
            await db.append_message(
                "deploy", StoredMessage(role="user", content="scripts/deploy_v2.sh fails", timestamp=T0 + 11)
            )

    anyio.run(write)


def run(home: Path, *argv: str) -> int:
    """`keel` with hybrid search asked for (`auto`: on, since the dev install has the extra)."""
    cfg = home / "dense.yaml"
    cfg.write_text("session_search:\n  dense: auto\n", encoding="utf-8")
    return main(["--config", str(cfg), "--home", str(home), *argv])


def test_reindex_embeds_the_history_with_progress_then_search_explains_both_rankings(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(home)
    assert run(home, "sessions", "search", "which dog breed", "--explain") == 0
    out = capsys.readouterr().out
    assert "hybrid search: on" in out
    assert "0 of 3 messages embedded (run `keel sessions reindex` for the rest)" in out
    assert "No matching sessions found" in out  # nothing embedded yet, and no word matches

    assert run(home, "sessions", "reindex") == 0
    out = capsys.readouterr().out
    assert "embedded 3 of 3 messages" in out
    assert "done: 3 messages embedded now; 3 of 3 have a vector" in out
    assert run(home, "sessions", "reindex") == 0
    assert "done: 0 messages embedded now; 3 of 3 have a vector" in capsys.readouterr().out

    assert run(home, "sessions", "search", "which dog breed", "--explain") == 0
    out = capsys.readouterr().out
    assert "3 of 3 messages embedded" in out
    assert "route: hybrid" in out
    assert "1. session pets" in out
    assert "[words #-, meaning #1]" in out

    assert run(home, "sessions", "search", "deploy_v2.sh", "--explain") == 0
    out = capsys.readouterr().out
    assert "route: lexical — a path or URL ('deploy_v2.sh'): words only" in out
    assert "1. session deploy" in out
    assert "[words #1, meaning #-]" in out


def test_with_dense_off_search_says_so_and_reindex_refuses(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(home)
    cfg = tmp_path / "keel.yaml"
    cfg.write_text("session_search:\n  dense: off\n", encoding="utf-8")
    assert main(["--config", str(cfg), "--home", str(home), "sessions", "search", "puppy", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "hybrid search: off — session_search.dense is off" in out
    assert "1. session pets" in out
    assert main(["--config", str(cfg), "--home", str(home), "sessions", "reindex"]) == 2
    assert "nothing to index" in capsys.readouterr().err
