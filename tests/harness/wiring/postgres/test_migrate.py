"""`migrate_home` / `keel storage migrate --to postgres`: a home copied into PostgreSQL, verified,
the source untouched, a rerun a no-op, and a worker with an empty home carries on from it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import pytest

from harness.cli import main
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from harness.wiring.migrate import migrate_home
from memory.curated import open_curated_pool
from memory.providers import PgPlace
from memory.providers.holographic import FactStore, PgFactStore
from memory.providers.semantic import PgSemanticStore, SemanticStore
from memory.testing import WordHashEmbedder
from tests.conftest import on_postgres


def tree_digest(home: Path) -> dict[str, str]:
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


async def make_home(home: Path) -> str:
    """A files-backend home: two users' memory (one with an archive) and their sessions."""
    for user in ("ada", "bob"):
        cfg = config(scope__user=user, memory__overflow="evict_oldest", memory__user_char_limit="40")
        steps = [
            call_tool(
                "memory", {"action": "add", "target": "user", "content": f"{user} likes the colour teal"}
            ),
            call_tool(
                "memory", {"action": "add", "target": "user", "content": f"{user} lives in a lighthouse"}
            ),
            say("noted"),
        ]
        async with open_session(
            cfg, SessionOptions(model=ScriptedModel(steps), home=home, tokenizer=FakeTokenizer())
        ) as s:
            await run_turn(s, "Teal. Lighthouse.")
            last = s.session_id
    return last


async def test_a_home_migrates_verified_untouched_and_a_rerun_is_a_no_op(
    tmp_path: Path, postgres_url: str, sessions_schema: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bob_session = await make_home(home)
    skill = home / "users" / "ada" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Ship it\n---\n1. make deploy\n", encoding="utf-8")
    before = tree_digest(home)
    first = await migrate_home(home, postgres_url, schema=sessions_schema)
    assert first.verified and not first.conflicts
    assert "users/ada/memories/USER.md" in first.copied and "users/bob/memories/ARCHIVE.jsonl" in first.copied
    assert f"session {bob_session}" in first.copied and "users/ada/skills/ (1 files)" in first.copied
    assert tree_digest(home) == before  # the source was not written
    again = await migrate_home(home, postgres_url, schema=sessions_schema)
    assert again.copied == [] and sorted(again.skipped) == sorted(first.copied) and again.verified
    with psycopg.connect(postgres_url, options=f"-c search_path={sessions_schema}") as conn:
        (text,) = conn.execute(
            "SELECT text FROM curated_docs WHERE scope = 'users/bob/memories' AND target = 'user'"
        ).fetchone() or ("",)
        archived = conn.execute(
            "SELECT content FROM curated_archive WHERE scope = 'users/bob/memories'"
        ).fetchall()
    assert text == "bob lives in a lighthouse"
    assert archived == [("bob likes the colour teal",)]
    # A worker with an empty home continues bob's session and sees bob's memory.
    pg = config(
        scope__user="bob",
        **on_postgres(postgres_url, sessions_schema),
    )
    model = ScriptedModel([say("hi bob")])
    opts = SessionOptions(
        model=model, home=tmp_path / "worker", tokenizer=FakeTokenizer(), resume=bob_session
    )
    async with open_session(pg, opts) as s:
        assert "bob lives in a lighthouse" in s.prompt.text
        await run_turn(s, "hello again")
    assert [m.content for m in model.requests[0].messages][-2:] == ["noted", "hello again"]


def test_the_cli_migrates_and_refuses_without_a_server(
    tmp_path: Path,
    postgres_url: str,
    sessions_schema: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("The build uses make\n", encoding="utf-8")
    monkeypatch.setenv("KEEL_HOME", str(home))
    argv = ["storage", "migrate", "--to", "postgres", "--url", postgres_url, "--schema", sessions_schema]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "copied 1" in out and "verified" in out
    assert main(["storage", "migrate", "--to", "postgres"]) != 0
    assert "--url" in capsys.readouterr().err


def provider_files(home: Path) -> None:
    """Each user's provider databases as the files backend leaves them: ada's facts (with
    vectors, an entity, a deleted fact so ids have a gap), bob's semantic memories."""
    ada = FactStore.open(home / "users" / "ada" / "memory_store.db", use_numpy=True)
    try:
        ada.add_fact("Ada Lovelace keeps bees on the roof.", category="user_pref", tags="bees")
        ada.remove_fact(ada.add_fact("A fact that was taken back.").fact_id)
        ada.add_fact("Ada Lovelace deploys on Fridays.", category="project")
    finally:
        ada.close()
    embedder = WordHashEmbedder()
    bob = SemanticStore.open(home / "users" / "bob" / "semantic.db")
    try:
        for text in ("bob drinks green tea", "bob lives in a lighthouse"):
            bob.add(text, embedder.embed([text])[0], model_id=embedder.model_id, origin="saved")
    finally:
        bob.close()


async def test_provider_databases_migrate_with_their_vectors_per_user_and_a_rerun_is_a_no_op(
    tmp_path: Path, postgres_url: str, sessions_schema: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    provider_files(home)
    before = tree_digest(home)
    first = await migrate_home(home, postgres_url, schema=sessions_schema)
    assert first.verified and not first.conflicts and first.left_in_place == []
    assert sorted(first.copied) == [
        "users/ada/memory_store.db (2 facts)",
        "users/bob/semantic.db (2 memories)",
    ]
    assert tree_digest(home) == before  # the source was not written (not even a -shm file)
    again = await migrate_home(home, postgres_url, schema=sessions_schema)
    assert again.copied == [] and sorted(again.skipped) == sorted(first.copied) and again.verified

    place = PgPlace(open_curated_pool(postgres_url, sessions_schema, size=2, timeout_s=5), sessions_schema)
    try:
        files = FactStore.open(home / "users" / "ada" / "memory_store.db", use_numpy=True)
        rows = PgFactStore.open(place, user_id="ada", use_numpy=True)
        try:
            assert rows.list_facts() == files.list_facts()  # ids, texts, trust, times, entities
            ids = [f.fact_id for f in files.list_facts()]
            assert ids == [3, 1]  # the gap of the deleted fact is kept
            assert all((rows.vectors(ids)[i] == files.vectors(ids)[i]).all() for i in ids)
            assert rows.add_fact("A new fact after the move.").fact_id == 4  # ids go on, never reused
        finally:
            files.close()
        memories = PgSemanticStore.open(place, user_id="bob")
        sqlite = SemanticStore.open(home / "users" / "bob" / "semantic.db")
        try:
            assert memories.recent(limit=10) == sqlite.recent(limit=10)
            assert memories.history() == sqlite.history()
            pg_ids, pg_matrix = memories.matrix("word-hash-64")
            file_ids, file_matrix = sqlite.matrix("word-hash-64")
            assert pg_ids == file_ids and pg_matrix.tobytes() == file_matrix.tobytes()
            # per user: ada has no memories, bob has no facts
            assert PgSemanticStore.open(place, user_id="ada").count() == 0
            assert PgFactStore.open(place, user_id="bob", use_numpy=False).count() == 0
        finally:
            sqlite.close()
    finally:
        place.pool.close()
    # the server now differs from the file: a rerun reports it and overwrites nothing
    third = await migrate_home(home, postgres_url, schema=sessions_schema)
    assert third.conflicts == [
        "users/ada/memory_store.db (2 facts): scope 'users/ada' on the server holds other facts"
    ]
