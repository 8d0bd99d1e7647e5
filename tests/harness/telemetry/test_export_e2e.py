"""End to end: a real session exports OTLP/HTTP to a real receiver in another process.

The receiver (`harness.testing.otlp_receiver`) decodes the protobuf with `opentelemetry-proto`; the session
is the `tool-session` scenario (tool calls over the project MCP server, a forced compression
with its flush and summary), played by the scripted scenario model, configured only through
the `telemetry` section as a user would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.config import load_config
from harness.experiments.runner import run_scenario
from harness.experiments.scenarios.tool_session import tool_session


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    out = tmp_path / "received.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.testing.otlp_receiver", str(out)],
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}", out
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_tool_session_with_a_compression_reaches_an_otlp_receiver(
    receiver: tuple[str, Path], tmp_path: Path
) -> None:
    url, out = receiver
    cfg = load_config(
        None,
        environ={
            "KEEL_TELEMETRY__OTLP_ENDPOINT": url,
            "KEEL_TELEMETRY__SERVICE_NAME": "keel-e2e",
            # memory before the tools, as for an API model, so the compression reloads it
            "KEEL_PROMPT__MEMORY_AFTER_TOOLS": "false",
        },
    )
    result = await run_scenario(
        tool_session(turns=8, compress_at=6), cfg, home=tmp_path / "home", label="otel"
    )
    assert result.compressions == 1
    received = _lines(out)
    spans = [r for r in received if r["signal"] == "span"]
    names = {s["name"] for s in spans}
    assert {"handle_conversation_turn", "chat scenario-model", "keel.compression"} <= names
    assert {"keel.compression.flush", "keel.compression.summary", "keel.compression.reload"} <= names
    assert all(s["service"] == "keel-e2e" for s in spans)
    tools = [s for s in spans if s["name"].startswith("execute_tool proj__")]
    assert tools and all(t["attributes"]["mcp.method.name"] == "tools/call" for t in tools)

    turns = [s for s in spans if s["name"] == "handle_conversation_turn"]
    assert len(turns) == 8
    assert len({t["attributes"]["gen_ai.conversation.id"] for t in turns}) == 1
    chats = sorted((s for s in spans if s["name"] == "chat scenario-model"), key=lambda s: s["start"])
    turn_chats = [c["attributes"] for c in chats if c["attributes"]["keel.request.purpose"] == "turn"]
    assert all(a["gen_ai.provider.name"] == "_OTHER" or a["gen_ai.provider.name"] for a in turn_chats)
    assert all(a["gen_ai.usage.input_tokens"] > 0 for a in turn_chats)
    assert "gen_ai.conversation.compacted" not in turn_chats[0]
    # keel's own: the meter's verdict on each request, computed online
    all_chats = [c["attributes"] for c in chats]
    assert all_chats[0]["keel.cache.miss_cause"] == "cold" and all_chats[0]["keel.phase"] == "cold"
    phases = {a["keel.phase"] for a in all_chats}
    assert {"cold", "steady", "flush", "summary", "rewarm"} <= phases
    assert all(isinstance(a["keel.cache.reusable_tokens"], int) for a in all_chats)
    flushes = [a for a in all_chats if a["keel.phase"] == "flush"]
    assert all("keel.cache.miss_cause" in a for a in flushes)
    assert turn_chats[-1]["gen_ai.conversation.compacted"] is True
    # every span of a turn shares the turn's trace
    by_id = {s["span_id"]: s for s in spans}
    for chat in chats:
        root = chat
        while root["parent_span_id"]:
            root = by_id[root["parent_span_id"]]
        assert root["name"] in ("handle_conversation_turn", "keel.compression")
        assert root["trace_id"] == chat["trace_id"]

    metrics = {m["name"] for m in received if m["signal"] == "metric"}
    assert {"keel.tokens.input", "keel.tokens.cached", "keel.tokens.written", "keel.turn.duration"} <= metrics


EXIT_WITHOUT_CLOSING = """
import sys
from harness.config import TelemetryConfig
from harness.telemetry._export import Export
from harness.telemetry.settings import export_settings

export = Export.start(export_settings(TelemetryConfig(otlp_endpoint=sys.argv[1]), {}))
with export.telemetry.turn(conversation_id="c1", session_id="s1", turn=1) as turn:
    turn.ended(stop_reason="final", iterations=1)
sys.exit(0)  # no close, no flush: the exit hook must export the queued span
"""


def test_spans_still_queued_when_the_process_exits_are_exported(receiver: tuple[str, Path]) -> None:
    url, out = receiver
    subprocess.run([sys.executable, "-c", EXIT_WITHOUT_CLOSING, url], check=True, timeout=60)
    spans = [r for r in _lines(out) if r["signal"] == "span"]
    assert [s["name"] for s in spans] == ["handle_conversation_turn"]
    assert spans[0]["attributes"]["gen_ai.conversation.id"] == "c1"
