"""The turn loop and compression against a real embedded model (SmolLM2-135M: fast, and its
tool calls are often wrong).

The model is small and its tool calls are often wrong, which is the point: whatever it
sends, the session must turn it into results, keep the transcript consistent, and go on.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from harness.config import KeelConfig
from harness.events import (
    CompressionFinished,
    Event,
    FlushCompleted,
    ToolCallStarted,
    ToolResultReady,
    TurnEnded,
    Warning,
)
from harness.models.factory import local_client
from harness.models.local import LocalModel
from harness.testing import config, run_turn
from harness.tools import ToolRegistry
from harness.trace import read_trace
from harness.types import Message, ModelRequest, ToolCall
from harness.wiring import SessionOptions, open_session
from memory import MemoryStore, MemoryTool, memory_tool_schema
from prompts._text import load_text


def _cfg(**extra: str) -> KeelConfig:
    settings = {
        "model__max_output_tokens": "48",
        "model__temperature": "0",
        "limits__max_iterations": "2",
        "session_search__enabled": "false",
        "skills__enabled": "false",
        **extra,
    }
    return config(**settings)


async def test_a_three_turn_session_with_the_memory_tool_completes(
    small_model: LocalModel, home: Path
) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        model = local_client(http, small_model.base_url, small_model.model, 300, api_key=small_model.api_key)
        async with open_session(_cfg(), SessionOptions(model=model, home=home)) as session:
            all_events: list[Event] = []
            for text in (
                "Hi, I'm Ada. Please remember that I like green tea.",
                "Save this in your memory: my cat is called Miso.",
                "What do you remember about me?",
            ):
                events = await run_turn(session, text)
                all_events += events
                assert isinstance(events[-1], TurnEnded)
            transcript = session.transcript
    started = {e.call_id for e in all_events if isinstance(e, ToolCallStarted)}
    answered = {e.call_id for e in all_events if isinstance(e, ToolResultReady)}
    assert started == answered, "every tool call the model made got a result"
    for result in (e for e in all_events if isinstance(e, ToolResultReady)):
        assert isinstance(json.loads(result.content)["success"], bool)
    # transcript consistency: each assistant tool call is followed by its results
    for i, m in enumerate(transcript):
        if m.tool_calls:
            ids = [t.tool_call_id for t in transcript[i + 1 : i + 1 + len(m.tool_calls)]]
            assert ids == [c.id for c in m.tool_calls]
    trace = session.handles.trace_path
    assert trace is not None
    records = list(read_trace(trace))
    assert len(records) >= 3
    assert all(r.usage is not None and r.usage.input > 0 for r in records), "llama.cpp reports prompt tokens"
    assert len({r.system for r in records}) == 1, "the frozen prefix never changed"


async def test_whatever_the_real_model_sends_to_the_memory_tool_becomes_a_result(
    small_model: LocalModel, tmp_path: Path
) -> None:
    store = MemoryStore(tmp_path / "memories")
    tool = MemoryTool(store)
    schema = memory_tool_schema(load_text("tool_memory"))
    from harness.tools.builtin import memory_tool

    registry = ToolRegistry()
    registry.add(memory_tool(tool, schema, manager=None))
    async with httpx.AsyncClient(timeout=300) as http:
        model = local_client(http, small_model.base_url, small_model.model, 300, api_key=small_model.api_key)
        calls: list[ToolCall] = []
        for ask in (
            "Remove my old note about coffee.",
            "Replace the note about my job.",
            "Remember I live in Oslo.",
        ):
            reply = await model.complete(
                ModelRequest(
                    system="You manage the user's memory with the memory tool.",
                    messages=(Message("user", ask),),
                    tools=registry.specs(),
                    tool_choice="memory",
                    max_tokens=64,
                    temperature=0.0,
                )
            )
            calls += reply.message.tool_calls
    # a deliberately incomplete call, as small models often send: remove without old_text
    calls.append(ToolCall("bad", "memory", json.dumps({"action": "remove", "target": "memory"})))
    assert len(calls) >= 2
    for call in calls:
        result, _ = await registry.run(call)
        payload = json.loads(result.content)
        assert isinstance(payload["success"], bool)
        assert result.is_error == (payload["success"] is False)
    bad, _ = await registry.run(calls[-1])
    assert bad.is_error
    assert "old_text" in bad.content


async def test_a_small_window_compresses_with_flush_and_keeps_answering(
    small_model: LocalModel, home: Path
) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        model = local_client(http, small_model.base_url, small_model.model, 300, api_key=small_model.api_key)
        # A 2K window (threshold 1,536 tokens): answers of up to 96 tokens fill it in a few
        # turns. (The system prompt with the memory tool takes ~800 of it; compression must
        # still happen, whether or not it brings the prompt back under the threshold.)
        cfg = _cfg(
            model__context_window="2048",
            model__max_output_tokens="96",
            compression__protect_first_n="0",
            compression__protect_last_n="2",
        )
        async with open_session(cfg, SessionOptions(model=model, home=home)) as session:
            first_id = session.session_id
            events: list[Event] = []
            topics = [
                "green tea",
                "mountain bikes",
                "sourdough bread",
                "jazz piano",
                "chess openings",
                "sailing",
                "volcanoes",
                "honeybees",
                "lighthouses",
                "glaciers",
                "coral reefs",
                "comets",
                "penguins",
                "tea ceremonies",
                "clockmaking",
                "deserts",
            ]
            for topic in topics:
                events += await run_turn(
                    session, f"Tell me three facts about {topic}, in two sentences each."
                )
                if any(isinstance(e, CompressionFinished) and e.new_session_id for e in events):
                    break
            finished = [e for e in events if isinstance(e, CompressionFinished) and e.new_session_id]
            assert finished, "the session never crossed the compression threshold"
            # The flush call was made before the summary. (It may fail on this model — e.g.
            # the server errors on a malformed tool call — and then compression goes on
            # without it, with a warning: that is the designed behaviour, not a test failure.)
            flushed = any(isinstance(e, FlushCompleted) for e in events)
            warned = [
                e.message for e in events if isinstance(e, Warning) and "memory flush failed" in e.message
            ]
            assert flushed or warned, [e for e in events if isinstance(e, Warning)]
            assert finished[0].messages_after < finished[0].messages_before
            assert session.session_id != first_id
            after = await run_turn(session, "Thanks. One more fact about tea, please.")
            assert isinstance(after[-1], TurnEnded)
            assert any(m.summary for m in session.transcript)
    trace = session.handles.trace_path
    assert trace is not None
    purposes = [r.purpose for r in read_trace(trace)]
    assert "flush" in purposes
    assert purposes.index("flush") < purposes.index("summary")
