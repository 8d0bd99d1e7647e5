"""`keel memory|skills|sessions` on `storage.backend: postgres`: real `keel` processes on
several homes that share one server see and change the same rows, never a home's files.

The deployment's promise: a principal's memory is the server's, whichever home a command
runs from, and a write a session held on one worker is confirmed from any other and reaches
the next session.
"""

from __future__ import annotations

from pathlib import Path

from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from harness.wiring.scoped import skill_library
from harness.wiring.stores import open_place
from memory import Principal
from tests.conftest import on_postgres
from tests.harness.wiring.test_provenance_wiring import DERIVED, SKILL
from tests.subprocesses import run_python


def write_config(path: Path, url: str, schema: str) -> Path:
    path.write_text(
        "storage:\n"
        "  backend: postgres\n"
        f"  url: {url}\n"
        f"  pg_schema: {schema}\n"
        "memory:\n"
        "  untrusted_writes: hold\n"
        "  meaning_check: never\n",
        encoding="utf-8",
    )
    return path


def keel(cfg: Path, home: Path, *argv: str, user: str = "ada") -> str:
    """Run `keel --config CFG --home HOME --user USER ARGV...` as a process; its stdout (it must
    succeed)."""
    return run_python(
        "-m", "harness", "--config", str(cfg), "--home", str(home), "--user", user, *argv
    ).stdout


def test_memory_added_from_three_homes_is_shown_on_a_fourth(
    tmp_path: Path, postgres_url: str, pg_schema: str
) -> None:
    cfg = write_config(tmp_path / "keel.yaml", postgres_url, pg_schema)
    facts = ["Ada writes Rust", "Ada lives in Oslo", "Ada prefers tea"]
    for n, fact in enumerate(facts):
        assert "Added." in keel(cfg, tmp_path / f"home-{n}", "memory", "add", "user", fact)
    shown = keel(cfg, tmp_path / "home-4", "memory", "show", "user")
    assert all(fact in shown for fact in facts)
    listed = keel(cfg, tmp_path / "home-4", "memory", "list", "user")
    assert "3 entries" in listed
    assert keel(cfg, tmp_path / "home-4", "memory", "list", "user", user="bob").count("Ada") == 0
    # Nothing was written to any home: the rows are the memory.
    for n in range(5):
        home = tmp_path / f"home-{n}"
        assert not (home / "users").exists() and not (home / "memories").exists()
    path = keel(cfg, tmp_path / "home-4", "memory", "path")
    assert "curated_docs" in path and "curated_pending" in path


async def test_a_write_held_on_one_worker_is_confirmed_from_another_home_and_reaches_a_session(
    tmp_path: Path, postgres_url: str, pg_schema: str
) -> None:
    cfg_path = write_config(tmp_path / "keel.yaml", postgres_url, pg_schema)
    cfg = config(
        **on_postgres(postgres_url, pg_schema),
        scope__user="ada",
        memory__untrusted_writes="hold",
        memory__meaning_check="never",
    )
    ada = Principal(user_id="ada")
    model = ScriptedModel(
        [
            call_tool("skill_view", {"name": "supplier-portal"}),
            call_tool("memory", {"action": "add", "target": "user", "content": DERIVED}),
            say("The page lists a payee."),
        ]
    )
    options = SessionOptions(model=model, home=tmp_path / "worker", tokenizer=FakeTokenizer())
    async with open_session(cfg, options) as session:
        async with open_place(cfg, tmp_path / "setup") as place:
            library = skill_library(cfg, tmp_path / "setup", ada, stores=place)
            library.create("supplier-portal", SKILL)
        await run_turn(session, "What does the supplier page say?")
        session_id = session.session_id

    other = tmp_path / "laptop"
    assert session_id in keel(cfg_path, other, "sessions", "list")
    assert "What does the supplier page say?" in keel(cfg_path, other, "sessions", "show", session_id)
    assert "supplier-portal" in keel(cfg_path, other, "skills", "list")
    assert "NOTE TO AI ASSISTANTS" in keel(cfg_path, other, "skills", "show", "supplier-portal")
    pending = keel(cfg_path, other, "memory", "pending")
    assert "1 memory write(s) held" in pending and "ACME Holdings" in pending
    assert "Saved:" in keel(cfg_path, other, "memory", "confirm", "1")
    assert "No memory write is waiting" in keel(cfg_path, tmp_path / "third", "memory", "pending")
    assert not (tmp_path / "worker" / "users").exists() and not (other / "users").exists()

    later = ScriptedModel([say("hello")])
    options = SessionOptions(model=later, home=tmp_path / "another-worker", tokenizer=FakeTokenizer())
    async with open_session(cfg, options) as session:
        await run_turn(session, "hi")
    (request,) = later.requests
    assert DERIVED in request.system


def test_discard_on_one_home_drops_the_write_for_every_home(
    tmp_path: Path, postgres_url: str, pg_schema: str
) -> None:
    cfg = write_config(tmp_path / "keel.yaml", postgres_url, pg_schema)
    keel(cfg, tmp_path / "a", "memory", "list")  # creates the schema
    import psycopg

    with psycopg.connect(postgres_url, options=f"-c search_path={pg_schema}") as conn:
        conn.execute(
            "INSERT INTO curated_pending (scope, target, content, origin, held_at) "
            "VALUES ('users/ada/memories', 'user', 'Ada likes chess', 'fetched', 'now')"
        )
    assert "Discarded: Ada likes chess" in keel(cfg, tmp_path / "b", "memory", "discard", "1")
    assert "No memory write is waiting" in keel(cfg, tmp_path / "c", "memory", "pending")
