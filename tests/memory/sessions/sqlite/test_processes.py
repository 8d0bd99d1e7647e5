"""Two OS processes writing to one fresh state.db at once: no lost rows, no lock errors escaping."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
PER_PROCESS = 150

WRITER = """
import pathlib, sys, time
import anyio
from memory import SessionConflictError, StoredMessage, open_session_db

path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])

async def main() -> None:
    while not go.exists():  # start together: both open, migrate and write at the same moment
        await anyio.sleep(0.002)
    async with open_session_db(pathlib.Path(path)) as db:
        try:
            await db.create_session("shared", source="test", started_at=time.time())
        except SessionConflictError:
            pass  # the other process was first
        await db.create_session(name, source="test", started_at=time.time(), parent_session_id="shared")
        for i in range(count):
            own = StoredMessage(role="user", content=f"{name} own {i}", timestamp=time.time())
            await db.append_message(name, own)
            await db.append_message(
                "shared", StoredMessage(role="assistant", content=f"{name} shared {i}", timestamp=time.time())
            )
            await db.add_usage("shared", input=1, output=2)

anyio.run(main)
"""


def test_two_processes_write_one_database_without_losing_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, str(PER_PROCESS), str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    time.sleep(0.5)  # let both interpreters start and wait at the line
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err

    conn = sqlite3.connect(path)
    try:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == sorted(set(versions))  # each migration applied exactly once
        for name in ("alpha", "beta"):
            own = [
                r[0]
                for r in conn.execute(
                    "SELECT content FROM messages WHERE session_id = ? ORDER BY seq", (name,)
                )
            ]
            assert own == [f"{name} own {i}" for i in range(PER_PROCESS)]
        shared = conn.execute(
            "SELECT seq, content FROM messages WHERE session_id = 'shared' ORDER BY seq"
        ).fetchall()
        assert [seq for seq, _ in shared] == list(range(2 * PER_PROCESS))  # no gaps, no duplicates
        for name in ("alpha", "beta"):
            mine = [c for _, c in shared if c.startswith(name)]
            assert mine == [f"{name} shared {i}" for i in range(PER_PROCESS)]  # each writer's order kept
        count, tokens_in, tokens_out, calls = conn.execute(
            "SELECT message_count, input_tokens, output_tokens, api_call_count "
            "FROM sessions WHERE id = 'shared'"
        ).fetchone()
        assert (count, tokens_in, tokens_out, calls) == (
            2 * PER_PROCESS,
            2 * PER_PROCESS,
            4 * PER_PROCESS,
            2 * PER_PROCESS,
        )
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        conn.execute("INSERT INTO messages_trigram(messages_trigram, rank) VALUES ('integrity-check', 1)")
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
