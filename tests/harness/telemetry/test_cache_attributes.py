"""`keel.cache.*` and `keel.phase`: the cache meter's verdict on each request, online, equal to
what `keel cache report` says of the same trace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from harness.cachemeter import CanonicalRenderer, measure
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, respond, run_turn, say
from harness.tokens import CharTokenizer
from harness.trace import read_trace
from harness.types import ModelRequest
from harness.wiring import SessionOptions, open_session
from tests.harness.telemetry.conftest import Captured, make_captured


@pytest.fixture
def ideal() -> Iterator[Captured]:
    c = make_captured(simulators={})  # every provider → the content view, `ideal`
    yield c
    c.export.close()


def _chats(c: Captured) -> list[dict[str, object]]:
    spans: list[ReadableSpan] = sorted(
        (s for s in c.spans() if s.name.startswith("chat ")), key=lambda s: s.start_time or 0
    )
    return [dict(s.attributes or {}) for s in spans]


def _options(
    home: Path, model: ScriptedModel, c: Captured, *, trace_path: Path | None = None
) -> SessionOptions:
    return SessionOptions(
        model=model, home=home, tokenizer=FakeTokenizer(), telemetry=c.export.telemetry, trace_path=trace_path
    )


async def test_the_first_request_is_cold_and_a_continuation_is_steady_with_no_cause(
    home: Path, ideal: Captured
) -> None:
    async with open_session(config(), _options(home, ScriptedModel([say("One."), say("Two.")]), ideal)) as s:
        await run_turn(s, "Hello")
        await run_turn(s, "Again")
    first, second = _chats(ideal)
    assert first["keel.phase"] == "cold"
    assert first["keel.cache.miss_cause"] == "cold"
    assert first["keel.cache.reusable_tokens"] == 0
    assert second["keel.phase"] == "steady"
    assert "keel.cache.miss_cause" not in second  # all of the earlier request was reused
    reusable = second["keel.cache.reusable_tokens"]
    assert isinstance(reusable, int) and reusable > 0


async def test_a_live_memory_write_is_a_system_changed_miss_naming_the_slot(
    home: Path, ideal: Captured
) -> None:
    model = ScriptedModel(
        [
            call_tool(
                "memory", {"action": "add", "target": "memory", "content": "The build runs on Fridays"}
            ),
            say("Noted."),
        ]
    )
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("The deploy happens on Mondays\n", encoding="utf-8")
    async with open_session(config(memory__snapshot_policy="live"), _options(home, model, ideal)) as s:
        await run_turn(s, "Remember the build runs on Fridays.")
    _, after_write = _chats(ideal)
    assert after_write["keel.cache.miss_cause"] == "system_changed:memory"
    assert after_write["keel.phase"] == "steady"


async def test_compression_phases_and_causes_are_the_reports_own(home: Path, ideal: Captured) -> None:
    long = "We compared three brewing temperatures for oolong and wrote the results down. " * 15

    def answer(request: ModelRequest) -> str:
        if request.purpose == "flush":
            return "nothing to save"
        if request.purpose == "summary":
            return "They compared brewing temperatures."
        return long

    trace = home / "trace.jsonl"
    model = ScriptedModel([respond(answer)] * 40)
    async with open_session(config(), _options(home, model, ideal, trace_path=trace)) as s:
        for i in range(6):
            await run_turn(s, f"Tell me more, part {i}.")
        await s.compress()
        await run_turn(s, "And now?")
        await run_turn(s, "Once more.")
    online = _chats(ideal)
    phases = [a["keel.phase"] for a in online]
    assert "flush" in phases and "summary" in phases
    assert phases[-2:] == ["rewarm", "steady"]
    # the report over the JSONL trace of the same session says the same, request by request
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace)))
    report = measure(records, CanonicalRenderer(CharTokenizer()), simulators=("ideal",))
    assert len(report.requests) == len(online)
    for row, phase, attrs in zip(report.requests, report.phases.assignment, online, strict=True):
        assert attrs["keel.phase"] == phase
        assert attrs["keel.cache.reusable_tokens"] == row.sims["ideal"].reusable
        label = row.sims["ideal"].reason.label
        expected = None if label == "none" else "cold" if label == "first_request" else label
        assert attrs.get("keel.cache.miss_cause") == expected


async def test_the_providers_simulator_adds_its_own_causes(home: Path) -> None:
    # OpenAI's cache reuses whole 128-token steps of a prefix: the rest is `block_rounding`
    c = make_captured(simulators={"keel.scripted": "openai"})
    trace = home / "trace.jsonl"
    try:
        model = ScriptedModel([say("One."), say("Two.")])
        async with open_session(config(), _options(home, model, c, trace_path=trace)) as s:
            await run_turn(s, "Hello")
            await run_turn(s, "Again")
        online = _chats(c)
    finally:
        c.export.close()
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace)))
    report = measure(records, CanonicalRenderer(CharTokenizer()), simulators=("openai", "ideal"))
    second = report.requests[1].sims
    assert second["openai"].reusable < second["ideal"].reusable
    assert second["openai"].reusable % 128 == 0
    assert online[1]["keel.cache.reusable_tokens"] == second["openai"].reusable
    assert online[1]["keel.cache.miss_cause"] == second["openai"].reason.label == "block_rounding"
