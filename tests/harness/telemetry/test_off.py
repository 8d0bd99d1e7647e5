"""Export off costs nothing: a whole session (a memory write, provider recall, a compression)
runs without importing any OpenTelemetry code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SESSION_WITHOUT_EXPORT = """
import json, sys, tempfile
from pathlib import Path

import anyio

from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session


async def main() -> None:
    model = ScriptedModel([call_tool("memory", {"action": "add", "target": "user", "content": "User likes tea"}), say("Noted.")])
    with tempfile.TemporaryDirectory() as home:
        opts = SessionOptions(model=model, home=Path(home), tokenizer=FakeTokenizer())
        async with open_session(config(memory__provider="holographic"), opts) as s:
            await run_turn(s, "Remember that I like tea.")
            await s.compress()


anyio.run(main)
print(json.dumps(sorted(sys.modules)))
"""


def test_a_session_with_export_off_loads_no_opentelemetry_at_all() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", SESSION_WITHOUT_EXPORT], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "harness.telemetry" in modules  # the port is there: the guard below means something
    # not the SDK, not the exporters, not even the API (which the MCP SDK loads: no MCP server
    # is configured here, so it is never imported)
    assert [m for m in modules if m == "opentelemetry" or m.startswith("opentelemetry.")] == []
    ours = [
        m
        for m in modules
        if m.startswith("harness.telemetry.")
        and m.split(".")[-1] in {"_export", "_worker", "_cache", "_attrs"}
    ]
    assert ours == []
