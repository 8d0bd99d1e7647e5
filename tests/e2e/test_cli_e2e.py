"""The newcomer's commands on the real embedded model: `keel demo` (shortened) and
`keel chat` driven through tmux the way a person would type into it.

Both run on SmolLM2-135M (`KEEL_MODEL__LOCAL_MODEL`): they check the commands' mechanics, and
the default 1.5B model took over 10 minutes for the shortened demo on a loaded 2-core machine.
What the default model's flush keeps is measured by benchmarks/local_flush.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SMALL_MODEL = "smollm2-135m"


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KEEL_HOME": str(home),
        "KEEL_MODEL__LOCAL_MODEL": SMALL_MODEL,
        "COLUMNS": "160",
    }


def test_the_demo_in_reduced_mode_prints_its_table_and_traces(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "demo", "--turns", "3", "--out", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "frozen snapshot vs live re-read" in out
    rows = [m.group(1) for m in re.finditer(r"^│\s+(\d+|all)\s+│", out, flags=re.MULTILINE)]
    assert rows == ["1", "2", "3", "all"], out
    assert "compression (frozen run)" in out, "the table has a column for compressions"
    assert "compression forced at the end" in out
    assert "durable facts the flush kept" in out
    assert re.search(r"durable facts in memory after the compression: \d of 6", out), out
    traces = sorted((tmp_path / "demo").glob("*/traces/*.jsonl"))
    assert [t.parent.parent.name for t in traces] == ["frozen", "live"]
    assert all(t.stat().st_size > 0 for t in traces)
    # the side writes landed on disk in both homes
    for policy in ("frozen", "live"):
        assert "short, direct answers" in (tmp_path / "demo" / policy / "memories" / "USER.md").read_text(
            encoding="utf-8"
        )


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def _wait_for(session: str, predicate: str, count: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", session)
        if screen.count(predicate) >= count:
            return screen
        time.sleep(0.5)
    raise AssertionError(f"waited {timeout:.0f}s for {count}× {predicate!r}; screen:\n{screen}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install tmux)")
def test_chat_answers_two_messages_and_quits_in_a_real_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = f"keel-chat-{os.getpid()}"
    env = _env(home)
    cmd = " ".join(
        [
            f"PYTHONPATH={REPO}",
            f"KEEL_HOME={home}",
            f"KEEL_MODEL__LOCAL_MODEL={SMALL_MODEL}",
            "KEEL_MODEL__MAX_OUTPUT_TOKENS=32",
            "KEEL_LIMITS__MAX_ITERATIONS=2",
            "KEEL_SKILLS__ENABLED=false",
            "KEEL_SESSION_SEARCH__ENABLED=false",
            sys.executable,
            "-m",
            "harness",
            "chat",
        ]
    )
    # keep the pane after keel exits, so the last screen (and the exit code) can be read
    cmd += '; echo "[keel exited $?]"; sleep 120'
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", cmd], check=True, env=env
    )
    try:
        _wait_for(session, "you>", 1, 240)
        _tmux("send-keys", "-t", session, "Hello, my name is Ada.", "Enter")
        _wait_for(session, "you>", 2, 240)
        _tmux("send-keys", "-t", session, "What is two plus two?", "Enter")
        _wait_for(session, "you>", 3, 240)
        _tmux("send-keys", "-t", session, "/usage", "Enter")
        _wait_for(session, "cache read", 1, 60)
        _tmux("send-keys", "-t", session, "/quit", "Enter")
        screen = _wait_for(session, "[keel exited", 1, 60)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, check=False)
    assert "Hello, my name is Ada." in screen
    assert "What is two plus two?" in screen
    assert screen.count("keel>") >= 2
    assert "requests" in screen
    assert "bye" in screen
    assert "[keel exited 0]" in screen
