"""Every span and attribute a session exports, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from harness.config import McpConfig, McpServerConfig
from harness.errors import ModelServerError
from harness.events import ToolResultReady
from harness.testing import (
    FakeTokenizer,
    ScriptedModel,
    call_tool,
    calls,
    config,
    fail,
    respond,
    run_turn,
    say,
    tool_call,
)
from harness.types import ModelRequest, Usage
from harness.wiring import SessionOptions, open_session
from tests.harness.telemetry.conftest import Captured, make_captured

USAGE = Usage(input=10, output=7, cache_read=80, cache_write=5)


def _options(home: Path, model: ScriptedModel, captured: Captured) -> SessionOptions:
    return SessionOptions(
        model=model, home=home, tokenizer=FakeTokenizer(), telemetry=captured.export.telemetry
    )


def _attrs(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def _by_purpose(turn_replies: list[str]) -> ScriptedModel:
    """Turn requests answered in order; flush and summary requests answered the same way each time."""
    queue = list(turn_replies)

    def answer(request: ModelRequest) -> str:
        if request.purpose == "flush":
            return "nothing to save"
        if request.purpose == "summary":
            return "The user asked about tea; the assistant answered."
        return queue.pop(0) if queue else "ok"

    return ScriptedModel([respond(answer)] * 50)


async def _hello(home: Path, captured: Captured) -> str:
    """One turn answered with `USAGE`; returns the session id (the conversation's root)."""
    model = ScriptedModel([say("Hello.", usage=USAGE)])
    async with open_session(config(), _options(home, model, captured)) as s:
        await run_turn(s, "Hi")
        return s.session_id


async def test_a_turn_is_one_handle_conversation_turn_span_holding_its_chat_span(
    home: Path, captured: Captured
) -> None:
    root = await _hello(home, captured)
    turn = captured.one("handle_conversation_turn")
    chat = captured.one("chat scripted")
    a = _attrs(turn)
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.conversation.id"] == root
    assert a["keel.turn"] == 1
    assert a["keel.turn.stop_reason"] == "final"
    assert a["gen_ai.usage.input_tokens"] == 95  # the turn's requests, inclusive
    assert chat.parent is not None and chat.parent.span_id == turn.context.span_id
    assert chat.context.trace_id == turn.context.trace_id
    assert turn.parent is None
    assert turn.kind == SpanKind.INTERNAL and chat.kind == SpanKind.CLIENT


async def test_a_chat_span_carries_the_conventions_request_response_and_usage_attributes(
    home: Path, captured: Captured
) -> None:
    root = await _hello(home, captured)
    a = _attrs(captured.one("chat scripted"))
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "keel.scripted"
    assert a["gen_ai.request.model"] == "scripted"
    assert a["gen_ai.response.model"] == "scripted"
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.conversation.id"] == root
    assert a["keel.request.purpose"] == "turn"
    # input is the whole prompt: 10 uncached + 80 read + 5 written
    assert a["gen_ai.usage.input_tokens"] == 95
    assert a["gen_ai.usage.cache_read.input_tokens"] == 80
    assert a["gen_ai.usage.cache_write.input_tokens"] == 5
    assert a["gen_ai.usage.output_tokens"] == 7
    assert a["keel.usage.reported"] is True
    ttfc = a["gen_ai.response.time_to_first_chunk"]
    assert isinstance(ttfc, float) and ttfc >= 0
    assert "gen_ai.usage.cache_creation.input_tokens" not in a  # the old name is opt-in
    assert "gen_ai.conversation.compacted" not in a  # only ever set true
    assert "gen_ai.input.messages" not in a  # content is opt-in


async def test_the_old_cache_creation_name_is_emitted_only_when_asked_for(home: Path) -> None:
    c = make_captured(alias=True)
    try:
        async with open_session(config(), _options(home, ScriptedModel([say("Hi.", usage=USAGE)]), c)) as s:
            await run_turn(s, "Hi")
        a = _attrs(c.one("chat scripted"))
        assert a["gen_ai.usage.cache_creation.input_tokens"] == 5
        assert a["gen_ai.usage.cache_write.input_tokens"] == 5
    finally:
        c.export.close()


async def test_message_content_is_recorded_only_with_capture_content(home: Path) -> None:
    c = make_captured(capture=True)
    try:
        async with open_session(config(), _options(home, ScriptedModel([say("Hello there.")]), c)) as s:
            await run_turn(s, "Hi, who are you?")
        a = _attrs(c.one("chat scripted"))
        messages = json.loads(str(a["gen_ai.input.messages"]))
        assert messages[-1] == {"role": "user", "parts": [{"type": "text", "content": "Hi, who are you?"}]}
        output = json.loads(str(a["gen_ai.output.messages"]))
        assert output == [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Hello there."}],
                "finish_reason": "stop",
            }
        ]
        system = json.loads(str(a["gen_ai.system_instructions"]))
        assert system[0]["type"] == "text" and system[0]["content"]
    finally:
        c.export.close()


async def test_a_failed_request_is_an_error_span_with_its_error_type(home: Path, captured: Captured) -> None:
    opts = _options(home, ScriptedModel([fail(ModelServerError("boom", status=500))]), captured)
    async with open_session(config(model__retry__max_attempts="1"), opts) as s:
        with pytest.raises(ModelServerError):
            await run_turn(s, "Hi")
    chat = captured.one("chat scripted")
    turn = captured.one("handle_conversation_turn")
    assert chat.status.status_code == StatusCode.ERROR
    assert _attrs(chat)["error.type"] == "ModelServerError"
    assert turn.status.status_code == StatusCode.ERROR


async def test_curated_writes_are_memory_spans_with_their_outcome(home: Path, captured: Captured) -> None:
    model = ScriptedModel(
        [
            call_tool("memory", {"action": "add", "target": "user", "content": "User drinks oolong"}),
            call_tool(
                "memory", {"action": "replace", "target": "user", "old_text": "coffee", "content": "x"}
            ),
            call_tool("memory", {"action": "remove", "target": "user", "old_text": "oolong"}),
            say("Done."),
        ]
    )
    async with open_session(config(), _options(home, model, captured)) as s:
        await run_turn(s, "Remember I drink oolong; then forget it.")
    create = _attrs(captured.one("create_memory"))
    assert create["gen_ai.operation.name"] == "create_memory"
    assert create["gen_ai.memory.store.id"] == "user"
    assert create["keel.memory.outcome"] == "saved"
    update = _attrs(captured.one("update_memory"))
    assert update["keel.memory.outcome"] == "refused"
    assert update["keel.memory.refusal"] == "no_match"
    assert _attrs(captured.one("delete_memory"))["keel.memory.outcome"] == "saved"
    turn = captured.one("handle_conversation_turn")
    assert captured.one("create_memory").context.trace_id == turn.context.trace_id


async def test_a_write_repeating_a_tool_result_is_held_and_its_span_says_so(
    home: Path, captured: Captured
) -> None:
    def fetch_notice() -> str:
        """Read the notice board."""
        return "The staging database password is hunter2-blue-otter, rotate it weekly."

    model = ScriptedModel(
        [
            call_tool("fetch_notice", {}),
            call_tool(
                "memory",
                {
                    "action": "add",
                    "target": "memory",
                    "content": "The staging database password is hunter2-blue-otter, rotate it weekly.",
                },
            ),
            say("Saved."),
        ]
    )
    opts = _options(home, model, captured)
    async with open_session(config(), opts, tools=[fetch_notice]) as s:
        await run_turn(s, "Read the notice and remember it.")
    a = _attrs(captured.one("create_memory"))
    assert a["keel.memory.outcome"] == "held"


async def test_a_compression_is_a_span_with_its_steps_as_children_and_later_requests_say_compacted(
    home: Path, captured: Captured
) -> None:
    long = "We talked about brewing oolong at 80 degrees for three minutes. " * 20
    model = _by_purpose([long] * 8 + ["After."])
    # memory before the tools, as for an API model: the compression reloads it
    async with open_session(config(prompt__memory_after_tools="false"), _options(home, model, captured)) as s:
        for i in range(8):
            await run_turn(s, f"Tell me about tea, part {i}.")
        await s.compress()
        await run_turn(s, "And now?")
    spans = captured.spans()
    compression = captured.one("keel.compression")
    a = _attrs(compression)
    assert a["keel.compression.outcome"] == "compressed"
    assert a["keel.compression.manual"] is True
    children = [s for s in spans if s.parent is not None and s.parent.span_id == compression.context.span_id]
    names = [c.name for c in sorted(children, key=lambda c: c.start_time or 0)]
    assert names[0] == "keel.compression.flush"
    assert names[-3:] == ["keel.compression.summary", "keel.compression.reload", "keel.compression.rebuild"]
    pieces = [_attrs(c)["keel.compression.piece"] for c in children if c.name == "keel.compression.flush"]
    assert pieces == list(range(1, len(pieces) + 1))
    # each flush and summary request nests inside its step
    by_id = {s.context.span_id: s for s in spans}
    for chat in (s for s in spans if s.name == "chat scripted"):
        purpose = _attrs(chat)["keel.request.purpose"]
        if purpose in ("flush", "summary"):
            assert chat.parent is not None
            assert by_id[chat.parent.span_id].name == f"keel.compression.{purpose}"
    turns = [
        _attrs(s) for s in spans if s.name == "chat scripted" and _attrs(s)["keel.request.purpose"] == "turn"
    ]
    assert "gen_ai.conversation.compacted" not in turns[0]
    assert turns[-1]["gen_ai.conversation.compacted"] is True
    # the conversation keeps its id across the compression's child session
    assert len({t["gen_ai.conversation.id"] for t in turns}) == 1
    assert len({t["keel.session.id"] for t in turns}) == 2


async def test_provider_recall_is_a_search_memory_span_in_the_turn(home: Path, captured: Captured) -> None:
    model = ScriptedModel([say("First."), say("Second.")])
    async with open_session(config(memory__provider="holographic"), _options(home, model, captured)) as s:
        await run_turn(s, "My cat is called Miso and she likes tuna.")
        await run_turn(s, "What is my cat called?")
    searches = captured.named("search_memory")
    assert searches, [s.name for s in captured.spans()]
    a = _attrs(searches[0])
    assert a["gen_ai.operation.name"] == "search_memory"
    assert a["gen_ai.memory.store.id"] == "holographic"
    assert "gen_ai.memory.query.text" not in a  # content is opt-in
    turn_ids = {t.context.span_id for t in captured.named("handle_conversation_turn")}
    assert len(searches) == 2  # one per turn
    assert all(s.parent is not None and s.parent.span_id in turn_ids for s in searches)


async def test_metrics_count_tokens_by_phase_and_record_turn_latency(home: Path, captured: Captured) -> None:
    model = ScriptedModel([say("One.", usage=USAGE), say("Two.", usage=USAGE)])
    async with open_session(config(), _options(home, model, captured)) as s:
        await run_turn(s, "Hi")
        await run_turn(s, "Again")
    captured.export.flush()
    data = captured.metrics.get_metrics_data()
    assert data is not None
    points: dict[str, list[object]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                points.setdefault(m.name, []).extend(m.data.data_points)
    sums = {name: sum(getattr(p, "value", 0) for p in pts) for name, pts in points.items()}
    assert sums["keel.tokens.input"] == 190
    assert sums["keel.tokens.cached"] == 160
    assert sums["keel.tokens.written"] == 10
    turn_points = points["keel.turn.duration"]
    assert sum(getattr(p, "count", 0) for p in turn_points) == 2
    labels = {k for p in points["keel.tokens.input"] for k in (getattr(p, "attributes", None) or {})}
    assert {"keel.phase", "keel.cache.miss_cause", "gen_ai.request.model"} <= labels


async def test_tool_calls_are_execute_tool_spans_inside_their_turn(home: Path, captured: Captured) -> None:
    def stock(item: str) -> str:
        """How many of `item` are in stock."""
        return f"{item}: 42"

    model = ScriptedModel(
        [
            calls(tool_call("stock", {"item": "oolong"}), tool_call("stock", {"item": "sencha"})),
            call_tool("stock", {"nope": 1}),
            say("Both are in stock."),
        ]
    )
    async with open_session(config(), _options(home, model, captured), tools=[stock]) as s:
        await run_turn(s, "How much tea is in stock?")
    spans = captured.named("execute_tool stock")
    assert len(spans) == 3
    turn = captured.one("handle_conversation_turn")
    assert all(s.parent is not None and s.parent.span_id == turn.context.span_id for s in spans)
    ok = [_attrs(s) for s in spans if "error.type" not in _attrs(s)]
    assert {a["gen_ai.tool.call.id"] for a in ok} == {"call_1", "call_2"}
    assert all(a["gen_ai.tool.type"] == "function" and a["gen_ai.tool.name"] == "stock" for a in ok)
    assert all("mcp.method.name" not in a for a in ok)
    bad = [_attrs(s) for s in spans if "error.type" in _attrs(s)]
    assert [a["error.type"] for a in bad] == ["tool_error"]  # invalid arguments: the model reads why
    assert "gen_ai.tool.call.arguments" not in ok[0]  # content is opt-in


async def test_an_mcp_call_carries_its_span_as_trace_context_to_the_server(
    home: Path, captured: Captured
) -> None:
    server = McpServerConfig(
        name="proj", command=sys.executable, args=("-m", "harness.testing.project_server", "--meta")
    )
    cfg = config().model_copy(update={"mcp": McpConfig(servers=(server,))})
    model = ScriptedModel([call_tool("proj__request_meta", {}), say("Done.")])
    async with open_session(cfg, _options(home, model, captured)) as s:
        events = await run_turn(s, "What did the server receive?")
    span = captured.one("execute_tool proj__request_meta")
    a = _attrs(span)
    assert a["gen_ai.tool.type"] == "extension"
    assert a["mcp.method.name"] == "tools/call"
    assert span.kind == SpanKind.CLIENT
    received = json.loads(next(e.content for e in events if isinstance(e, ToolResultReady)))
    trace_id = format(span.context.trace_id, "032x")
    span_id = format(span.context.span_id, "016x")
    assert received["traceparent"] == f"00-{trace_id}-{span_id}-01"


async def test_session_search_is_a_search_memory_span_with_its_result_count(
    home: Path, captured: Captured
) -> None:
    model = ScriptedModel(
        [say("Oolong it is."), call_tool("session_search", {"query": "oolong"}), say("You chose oolong.")]
    )
    async with open_session(config(), _options(home, model, captured)) as s:
        await run_turn(s, "I will brew oolong tonight.")
        await s.new_conversation()
        await run_turn(s, "What tea did I pick last time?")
    a = _attrs(captured.one("search_memory"))
    assert a["gen_ai.operation.name"] == "search_memory"
    assert a["gen_ai.memory.store.id"] == "sessions"
    assert a["gen_ai.memory.record.count"] == 1
    assert captured.one("search_memory").parent is not None
