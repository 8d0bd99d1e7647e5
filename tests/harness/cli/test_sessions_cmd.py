"""`keel sessions list|show|search|path` against a real state.db."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from harness.cli import main
from memory import PgSessionStore, SessionStore, StoredMessage, open_session_db

REPO = Path(__file__).resolve().parents[3]
T0 = 1_700_000_000.0


async def write_history(db: SessionStore) -> None:
    await db.create_session("alpha", source="cli", model="gpt-5", started_at=T0)
    await db.append_messages(
        "alpha",
        [
            StoredMessage(role="user", content="plan the zeppelin trip", timestamp=T0 + 1),
            StoredMessage(role="assistant", content="Booked for May.", timestamp=T0 + 2),
        ],
    )
    await db.end_session("alpha", reason="compression", ended_at=T0 + 3)
    await db.create_session("beta", source="cli", model="gpt-5", started_at=T0 + 4, parent_session_id="alpha")
    await db.append_message("beta", StoredMessage(role="user", content="unrelated", timestamp=T0 + 5))


def seed(home: Path) -> None:
    async def write() -> None:
        async with open_session_db(home / "state.db") as db:
            await write_history(db)

    anyio.run(write)


def run(home: Path, *argv: str) -> int:
    return main(["--home", str(home), *argv])


def test_every_verb_says_no_sessions_yet_when_there_is_no_database(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["sessions", "list"], ["sessions", "show", "x"], ["sessions", "search", "x"]):
        assert run(home, *argv) == 0
        assert "No sessions yet" in capsys.readouterr().out
    assert not (home / "state.db").exists()  # looking does not create the store


def test_list_show_search_and_path_on_a_real_store(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(home)
    assert run(home, "sessions", "list") == 0
    out = capsys.readouterr().out
    assert "alpha" in out
    assert "beta" in out
    assert "compression" in out
    assert "2023-11-14 22:13" in out
    assert out.index("beta") < out.index("alpha")  # newest first

    assert run(home, "sessions", "show", "alpha") == 0
    out = capsys.readouterr().out
    assert "plan the zeppelin trip" in out
    assert "Booked for May." in out
    assert "(compression)" in out

    assert run(home, "sessions", "search", "zeppelin", "trip", "--limit", "2") == 0
    out = capsys.readouterr().out
    assert "1. session alpha" in out
    assert ">>>zeppelin<<<" in out
    assert "> #1 user" in out  # the matched message is marked

    assert run(home, "sessions", "search", "nothing-matches-this") == 0
    assert "No matching sessions found" in capsys.readouterr().out

    assert run(home, "sessions", "path") == 0
    assert capsys.readouterr().out.strip() == str(home / "state.db")


def test_bad_input_exits_2_with_a_next_step(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(home)
    assert run(home, "sessions", "show", "ghost") == 2
    assert "keel sessions list" in capsys.readouterr().err
    assert run(home, "sessions", "search", "   ") == 2
    assert "query is empty" in capsys.readouterr().err
    for argv in (["sessions", "search", "x", "--limit", "11"], ["sessions", "list", "--limit", "0"]):
        with pytest.raises(SystemExit) as exc:
            run(home, *argv)
        assert exc.value.code == 2
    assert "more than 10" in capsys.readouterr().err


def test_a_corrupt_store_is_reported_not_crashed_on(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (home / "state.db").write_bytes(b"garbage" * 500)
    assert run(home, "sessions", "list") == 2
    assert "move it aside" in capsys.readouterr().err


def test_the_installed_entry_point_lists_sessions(home: Path) -> None:
    seed(home)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KEEL_HOME": str(home), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "sessions", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "alpha" in done.stdout
    assert "beta" in done.stdout


def test_every_verb_works_on_a_postgresql_store_named_in_the_config(
    home: Path, tmp_path: Path, postgres_url: str, pg_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def write() -> None:
        async with await PgSessionStore.open(postgres_url, schema=pg_schema) as db:
            await write_history(db)

    anyio.run(write)
    cfg = tmp_path / "keel.yaml"
    cfg.write_text(
        f"sessions:\n  backend: postgres\n  url: {postgres_url}\n  pg_schema: {pg_schema}\n", encoding="utf-8"
    )

    def pg(*argv: str) -> int:
        return main(["--config", str(cfg), "--home", str(home), *argv])

    assert pg("sessions", "list") == 0
    out = capsys.readouterr().out
    assert out.index("beta") < out.index("alpha")
    assert pg("sessions", "show", "alpha") == 0
    assert "Booked for May." in capsys.readouterr().out
    assert pg("sessions", "search", "zeppelin", "trip") == 0
    assert "1. session alpha" in capsys.readouterr().out
    assert pg("sessions", "path") == 0
    assert capsys.readouterr().out.strip() == f"{postgres_url} (schema {pg_schema})"
    assert not (home / "state.db").exists()


def test_a_postgresql_server_that_does_not_answer_exits_2_naming_the_url_without_its_password(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = tmp_path / "keel.yaml"
    cfg.write_text(
        "sessions:\n  backend: postgres\n"
        f"  url: postgresql://keel:secret@127.0.0.1:{port}/keel\n  connect_timeout_s: 2\n",
        encoding="utf-8",
    )
    assert main(["--config", str(cfg), "--home", str(home), "sessions", "list"]) == 2
    err = capsys.readouterr().err
    assert f"postgresql://keel:***@127.0.0.1:{port}/keel" in err
    assert "secret" not in err
    assert not (home / "state.db").exists()
