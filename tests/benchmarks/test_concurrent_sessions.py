"""The many-sessions benchmark runs quick, end to end, and its invariants hold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(tmp_path: Path, *argv: str) -> tuple[int, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = REPO / "benchmarks" / "concurrent_sessions.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    figures: dict[str, float] = {}
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"([a-z0-9_]+) (-?\d+(?:\.\d+)?)", line)
        if match:
            figures[match[1]] = float(match[2])
    return done.returncode, figures


@pytest.mark.slow
def test_quick_run_on_sqlite_stores_every_message_and_leaks_nothing(tmp_path: Path) -> None:
    code, figures = run(tmp_path, "--backend", "sqlite")
    assert code == 0, figures
    assert figures["cross_user_leaks"] == 0
    assert figures["lost_messages"] == 0
    assert figures["own_word_misses"] == 0  # the check can find what is there
    assert figures["search_errors"] == 0
    assert figures["multiprocess_locked_errors"] == 0
    assert figures["messages_sent_sqlite"] == figures["messages_stored_sqlite"] > 0
    assert figures["sessions_turns_per_s"] == figures["sessions_turns_per_s_sqlite"] > 0


@pytest.mark.slow
def test_quick_run_on_postgres_stores_every_message_leaks_nothing_and_drops_its_schema(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    def bench_schemas() -> set[str]:
        with psycopg.connect(postgres_url) as conn:
            rows = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'keel_bench_%'"
            ).fetchall()
        return {str(r[0]) for r in rows}

    before = bench_schemas()
    code, figures = run(tmp_path, "--backend", "postgres", "--processes", "0", "--url", postgres_url)
    assert code == 0, figures
    assert figures["cross_user_leaks_postgres"] == 0 and figures["own_word_misses_postgres"] == 0
    assert figures["search_errors_postgres"] == 0
    assert figures["messages_sent_postgres"] == figures["messages_stored_postgres"] > 0
    assert figures["lost_messages"] == 0
    assert bench_schemas() == before  # the run dropped the schema it made
