"""`keel storage stats|prune` on a real home (state.db, traces) and on PostgreSQL."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from harness.cli import main
from memory import PgSessionStore, SessionStore, StoredMessage, open_session_db

DAY = 86_400.0


async def two_sessions(db: SessionStore) -> None:
    now = time.time()
    for sid, age in (("old", 100 * DAY), ("new", 60.0)):
        await db.create_session(sid, source="cli", started_at=now - age)
        await db.append_message(sid, StoredMessage(role="user", content=f"hello {sid}", timestamp=now - age))


def write_config(home: Path, extra: str = "") -> Path:
    path = home / "keel.yaml"
    path.write_text(f"retention:\n  sessions_max_age_days: 30\n  traces_max_age_days: 30\n{extra}")
    return path


def test_prune_dry_run_then_prune_then_stats_on_a_home(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def seed() -> None:
        async with open_session_db(home / "state.db") as db:
            await two_sessions(db)

    anyio.run(seed)
    trace = home / "traces" / "old.jsonl"
    trace.parent.mkdir()
    trace.write_text("{}\n")
    os.utime(trace, (time.time() - 90 * DAY,) * 2)
    config = str(write_config(home))

    assert main(["--config", config, "storage", "prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove 1 sessions" in out and "would remove 1 messages" in out
    assert "would remove 1 trace files" in out and "dry run: nothing was removed" in out
    assert trace.exists()

    assert main(["--config", config, "storage", "prune"]) == 0
    out = capsys.readouterr().out
    assert "removed 1 sessions" in out and "removed 1 trace files" in out
    assert not trace.exists()

    assert main(["--config", config, "storage", "prune"]) == 0
    assert "Nothing to prune" in capsys.readouterr().out

    assert main(["--config", config, "storage", "stats"]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in out.splitlines()
        if line.count("│") > 3
    }
    assert (rows["sessions"], rows["messages"], rows["traces"]) == ("1", "1", "0")


def test_prune_and_stats_on_postgresql(
    home: Path, postgres_url: str, sessions_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def seed() -> None:
        async with await PgSessionStore.open(postgres_url, schema=sessions_schema) as db:
            await two_sessions(db)

    anyio.run(seed)
    config = str(
        write_config(
            home, f"storage:\n  backend: postgres\n  url: {postgres_url}\n  pg_schema: {sessions_schema}\n"
        )
    )
    assert main(["--config", config, "storage", "prune"]) == 0
    assert "removed 1 sessions" in capsys.readouterr().out
    assert main(["--config", config, "storage", "stats"]) == 0
    out = capsys.readouterr().out
    assert f"schema {sessions_schema}" in out and "messages" in out


def test_storage_path_still_prints_the_home(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "path"]) == 0
    assert str(home) in capsys.readouterr().out


def test_run_events_of_long_ended_runs_are_pruned_through_the_run_store(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory.runs import NewRun, RunEnd, open_run_store

    old = time.time() - 30 * DAY

    async def seed() -> None:
        async with open_run_store("files", home=home) as runs:
            for run_id, ended in (("r-old", old), ("r-new", time.time())):
                await runs.admit(NewRun(run_id, f"s-{run_id}", "", "hi", "w1"), now=ended)
                await runs.append(
                    run_id, [(1, "text", "{}"), (2, "done", "{}")], end=RunEnd("completed"), now=ended
                )

    async def left() -> tuple[int, int]:
        async with open_run_store("files", home=home) as runs:
            return len(await runs.events_after("r-old", 0)), len(await runs.events_after("r-new", 0))

    anyio.run(seed)
    config = home / "keel.yaml"
    config.write_text("retention:\n  run_events_max_age_days: 10\n")
    assert main(["--config", str(config), "storage", "prune", "--dry-run"]) == 0
    assert "not counted on a dry run" in capsys.readouterr().out
    assert anyio.run(left) == (2, 2)
    assert main(["--config", str(config), "storage", "prune"]) == 0
    assert "removed 2 run events" in capsys.readouterr().out
    assert anyio.run(left) == (0, 2)
