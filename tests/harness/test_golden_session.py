"""A scripted session's bytes, pinned: what it sends the model and what it stores.

Moves of code (the meter's kernel, the CLI's lazy imports, `usage.py`, the slot gathering)
must not change a prompt byte or a stored byte. This test plays one session through the real
wiring — MCP tools over the project server, a memory write, a forced compression with its
flush and summary, a rebuilt prefix — and digests every request the model received and every
row and memory file the session stored. The expected digests were computed once from main
before those moves; a change to either is a change of behaviour and needs a decision (and a
new digest, with the reason in the commit).

What varies from run to run is normalised before digesting: the temporary home's path,
session ids (numbered in order of appearance) and wall-clock timestamps.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from datetime import date
from pathlib import Path

import anyio
import anyio.to_thread

from harness.experiments.runner import apply_overrides
from harness.experiments.scenarios.model import ScenarioModel
from harness.experiments.scenarios.spec import ProbeSpec, Scenario, TurnSpec
from harness.experiments.scenarios.tool_session import tool_session
from harness.testing import config
from harness.types import ModelRequest
from harness.wiring import SessionOptions, open_session

# Changed on purpose, each time by a behaviour change, never by a move:
# - memright (issue 40 item 5) pins the skills slot on the session row (`memory_snapshot`
#   gained `"skills": ""`);
# - memright (issue 40 item 3, e81358f) lets the first compression's flush read the protected
#   head: the flush now reads turn 1, saves "The staging database is called inventory-stage"
#   (it was refused as never said), and the rebuilt prefix carries it;
# - memright (issue 40 item 7, 2bbf611) records with each saved flush entry where it came from
#   (`"via": "flush"`) and the message it rests on (`grounded_on`).
# Recomputed, not changed: perf (issue 36) digests the requests without their messages'
# `store_id` (never sent; a turn's replies now get theirs at the turn's end). Main before
# that change gave this same digest with store ids left out.
REQUESTS_SHA256 = "a57b8ffd87808e212b35fc0bf4d16a08491386634ecd216c337438e9194bbd2f"
ROWS_SHA256 = "c4d7831418a3807199c0964e8ae524c98337dc2eabc435045d344b5a04d55c3b"

# Columns holding wall-clock times; their values are replaced by whether they are set.
_CLOCK_COLUMNS = frozenset(
    {"started_at", "ended_at", "last_active_at", "timestamp", "created_at", "updated_at"}
)
_TABLES = ("sessions", "messages", "flushes")


def _scenario() -> Scenario:
    base = tool_session(6, compress_at=4)
    memory_add = {"action": "add", "target": "user", "content": "Dana reviews PRs on Tuesdays"}
    remember = TurnSpec.model_validate(
        {
            "user": "I'm Dana; remember that I review pull requests on Tuesdays. "
            "Our staging database is called inventory-stage.",
            "replies": [{"tool_calls": [{"name": "memory", "arguments": memory_add}]}, {"say": "Noted."}],
        }
    )
    probe = ProbeSpec(
        fact="The staging database is called inventory-stage",
        target="memory",
        turn=1,
        keyword="inventory-stage",
        question="What is the staging database called?",
    )
    return base.model_copy(update={"turns": (remember, *base.turns), "probes": (probe,)})


def _digest(value: object, norm: _Normaliser) -> str:
    text = norm.text(json.dumps(value, sort_keys=True, ensure_ascii=False))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Normaliser:
    """Replaces the run's variable parts: the home path and session ids."""

    def __init__(self, home: Path) -> None:
        self._home = str(home)
        self._ids: dict[str, str] = {}

    def session(self, sid: object) -> object:
        if not isinstance(sid, str):
            return sid
        return self._ids.setdefault(sid, f"session-{len(self._ids) + 1}")

    def text(self, value: str) -> str:
        value = value.replace(self._home, "<home>")
        for sid, label in self._ids.items():
            value = value.replace(sid, label)
        return value


def _rows(db: Path, norm: _Normaliser) -> dict[str, list[dict[str, object]]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        for (sid,) in conn.execute("SELECT id FROM sessions ORDER BY started_at, rowid"):
            norm.session(sid)
        out: dict[str, list[dict[str, object]]] = {}
        for table in _TABLES:
            rows = []
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY rowid"):
                item: dict[str, object] = {}
                for key in row.keys():  # noqa: SIM118 (sqlite3.Row has no __iter__ of keys)
                    value = row[key]
                    if key in _CLOCK_COLUMNS:
                        item[key] = value is not None
                    elif key in {"session_id", "parent_session_id"} or (key == "id" and table == "sessions"):
                        item[key] = norm.session(value)
                    else:
                        item[key] = value
                rows.append(item)
            out[table] = rows
        return out
    finally:
        conn.close()


def _memory_files(home: Path) -> dict[str, str]:
    files = sorted(p for p in (home / "memories").rglob("*") if p.is_file() and p.suffix != ".lock")
    return {str(p.relative_to(home)): p.read_text(encoding="utf-8") for p in files}


async def _play(home: Path) -> tuple[ScenarioModel, Path]:
    scenario = _scenario()
    # What API models get (the seeds' slot order, the full tool profile): the local layout and
    # profile (memory after the tools, compact tools; on by default for provider local) are
    # pinned by tests/harness/loop/test_local_layout.py and tests/harness/tools/test_profile.py.
    cfg = apply_overrides(
        config(prompt__memory_after_tools="false", prompt__tool_profile="full"), scenario.config
    )
    model = ScenarioModel(scenario)
    cwd = home / "work"
    await anyio.to_thread.run_sync(lambda: cwd.mkdir(parents=True))
    options = SessionOptions(model=model, home=home, cwd=cwd, today=lambda: date(2026, 3, 2), source="golden")
    async with open_session(cfg, options) as session:
        for n, turn in enumerate(scenario.turns, 1):
            model.begin_turn(n)
            async with session.run_turn(turn.user) as stream:
                async for _ in stream:
                    pass
            if turn.compress:
                await session.compress()
    return model, home / "state.db"


def _sent(request: ModelRequest) -> dict[str, object]:
    """What the model received: the request without the store ids its messages carry (they
    are the transcript's bookkeeping, never sent; when a row was written does not change them)."""
    out = dataclasses.asdict(request)
    out["messages"] = [
        {k: v for k, v in dataclasses.asdict(m).items() if k != "store_id"} for m in request.messages
    ]
    return out


async def test_a_scripted_session_sends_and_stores_the_same_bytes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    model, db = await _play(home)
    norm = _Normaliser(home)
    stored = await anyio.to_thread.run_sync(lambda: {"rows": _rows(db, norm), "memory": _memory_files(home)})
    requests = [_sent(r) for r in model.requests]
    for r in requests:  # native deferred loading (`mcp.defer_native`) is off here: nothing to send
        assert r.pop("deferred_tools") == ()
    purposes = [r.purpose for r in model.requests]
    assert purposes.count("summary") == 1 and "flush" in purposes  # the compression ran
    assert any(t.name == "proj__read_file" for t in model.requests[-1].tools)
    assert "Tuesdays" in json.dumps(stored["memory"])  # the memory tool's write is on disk
    assert (_digest(requests, norm), _digest(stored, norm)) == (REQUESTS_SHA256, ROWS_SHA256)
