"""The turn loop over fakes: events, tools, recall, errors, cancellation, traces."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from harness.errors import ModelConnectionError, ModelServerError, SessionError
from harness.events import (
    EVENT_ADAPTER,
    MemoryWritten,
    RecallAttached,
    TextDelta,
    ToolCallStarted,
    ToolResultReady,
    TurnEnded,
    UsageReported,
    Warning,
)
from harness.testing import (
    FakeMemory,
    FakeProviders,
    RecordingRecorder,
    ScriptedModel,
    call_tool,
    calls,
    config,
    fail,
    make_session,
    run_turn,
    say,
    tool_call,
)
from harness.tools import RawTool, ToolOutput
from harness.trace import TraceWriter, read_trace
from harness.types import JsonObject, Message, ToolSpec, Usage


async def test_a_turn_streams_text_and_ends_with_the_final_answer() -> None:
    model = ScriptedModel([say("Hello there, friend.")])
    recorder = RecordingRecorder()
    async with make_session(model, recorder=recorder) as session:
        events = await run_turn(session, "hi")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Hello there, friend."
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].final_text == "Hello there, friend."
    assert [m.role for m in session.transcript] == ["user", "assistant"]
    assert [m.role for m in recorder.messages[session.session_id]] == ["user", "assistant"]
    model.assert_complete()


async def test_events_round_trip_through_the_type_adapter() -> None:
    model = ScriptedModel([call_tool("memory", {"target": "user", "content": "Likes tea"}), say("ok")])
    async with make_session(model, memory=FakeMemory()) as session:
        events = await run_turn(session, "remember I like tea")
    for ev in events:
        assert EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(ev)) == ev


async def test_tool_calls_run_and_results_are_appended_in_call_order() -> None:
    memory = FakeMemory()
    model = ScriptedModel(
        [
            calls(
                tool_call("memory", {"target": "memory", "content": "first"}, id="a"),
                tool_call("memory", {"target": "memory", "content": "second"}, id="b"),
            ),
            say("Saved both."),
        ]
    )
    async with make_session(model, memory=memory) as session:
        events = await run_turn(session, "save two facts")
    roles = [m.role for m in session.transcript]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    assert [m.tool_call_id for m in session.transcript[2:4]] == ["a", "b"]
    assert sorted(memory.entries) == ["first", "second"]
    assert [e.content for e in events if isinstance(e, MemoryWritten)] == ["first", "second"]
    started = [e.call_id for e in events if isinstance(e, ToolCallStarted)]
    assert started == ["a", "b"]
    # the second request carried both results
    assert [m.role for m in model.requests[1].messages] == ["user", "assistant", "tool", "tool"]


async def test_a_bad_tool_call_becomes_an_error_result_and_the_turn_goes_on() -> None:
    model = ScriptedModel(
        [call_tool("memory", {"target": "memory"}), call_tool("no_such_tool", {}), say("sorry")]
    )
    async with make_session(model, memory=FakeMemory()) as session:
        events = await run_turn(session, "remember something")
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert [r.is_error for r in results] == [True, True]
    assert "content is required" in results[0].content
    assert "unknown tool 'no_such_tool'" in results[1].content
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].stop_reason == "final"


async def test_max_iterations_stops_a_tool_loop_with_a_warning() -> None:
    loop = [call_tool("memory", {"target": "memory", "content": f"x{i}"}) for i in range(3)]
    model = ScriptedModel(loop)
    async with make_session(model, cfg=config(limits__max_iterations="3"), memory=FakeMemory()) as session:
        events = await run_turn(session, "loop forever")
    assert any(isinstance(e, Warning) and "limits.max_iterations" in e.message for e in events)
    end = events[-1]
    assert isinstance(end, TurnEnded)
    assert end.stop_reason == "max_iterations"
    assert end.iterations == 3


async def test_recall_is_fenced_onto_the_user_message_and_replayed_byte_for_byte() -> None:
    providers = FakeProviders("- [0.5] User likes oolong tea")
    model = ScriptedModel([say("one"), say("two")])
    async with make_session(model, providers=providers) as session:
        events = await run_turn(session, "What tea do I like?")
        await run_turn(session, "And coffee?")
    assert any(isinstance(e, RecallAttached) for e in events)
    first_user = model.requests[0].messages[0]
    assert first_user.content == "What tea do I like?"
    assert first_user.api_content is not None
    assert first_user.api_content.startswith("What tea do I like?\n\n<memory-context>\n")
    # the second request replays exactly the bytes the first one sent
    assert model.requests[1].messages[0].wire_content == first_user.api_content
    # recall never touches the system prompt
    assert model.requests[0].system == model.requests[1].system
    assert "oolong" not in model.requests[0].system


async def test_recall_persist_false_drops_the_fence_after_its_turn() -> None:
    providers = FakeProviders("User likes oolong")
    model = ScriptedModel([say("one"), say("two")])
    async with make_session(model, cfg=config(recall__persist="false"), providers=providers) as session:
        await run_turn(session, "What tea do I like?")
        await run_turn(session, "Tell me more")
    assert model.requests[0].messages[0].api_content is not None
    replayed = model.requests[1].messages[0]
    assert replayed.api_content is None
    assert replayed.wire_content == "What tea do I like?"


async def test_trivial_messages_skip_recall() -> None:
    providers = FakeProviders("something")
    model = ScriptedModel([say("a"), say("b"), say("c")])
    async with make_session(model, providers=providers) as session:
        for text in ("ok", "/usage", "k8s pods keep restarting"):
            await run_turn(session, text)
    assert [q for _, q in providers.recall_calls] == ["k8s pods keep restarting"]
    # the one judgement of each message reaches the hooks after the turn, so they need not judge again
    assert [(user, trivial) for _, user, _, trivial in providers.after] == [
        ("ok", True),
        ("/usage", True),
        ("k8s pods keep restarting", False),
    ]


async def test_a_slow_recall_is_abandoned_after_the_bounded_wait() -> None:
    providers = FakeProviders("late facts", delay_s=30)
    model = ScriptedModel([say("answered without recall")])
    async with make_session(model, cfg=config(recall__wait_s="0.05"), providers=providers) as session:
        events = await run_turn(session, "what do you remember about me?")
    assert not any(isinstance(e, RecallAttached) for e in events)
    assert model.requests[0].messages[0].api_content is None


async def test_a_model_error_surfaces_after_the_stream_and_keeps_the_transcript_whole() -> None:
    model = ScriptedModel(
        [call_tool("memory", {"target": "memory", "content": "x"}), fail(ModelServerError("boom"))]
    )
    async with make_session(model, memory=FakeMemory()) as session:
        seen: list[object] = []

        async def consume() -> None:
            async with session.run_turn("save then fail") as stream:
                async for ev in stream:
                    seen.append(ev)

        with pytest.raises(ModelServerError, match="boom"):
            await consume()
        assert any(isinstance(e, ToolResultReady) for e in seen)
        assert [m.role for m in session.transcript] == ["user", "assistant", "tool"]
        # the session is usable again
        model.extend([say("recovered")])
        events = await run_turn(session, "again")
    assert isinstance(events[-1], TurnEnded)


async def test_leaving_the_stream_early_cancels_the_turn_and_repairs_the_transcript() -> None:
    gate = anyio.Event()

    async def stuck(_: str) -> ToolOutput:
        await gate.wait()
        return ToolOutput("never")

    tool = RawTool(ToolSpec("stuck", "Never returns."), stuck)
    model = ScriptedModel([call_tool("stuck", {})])
    async with make_session(model, extra_tools=[tool]) as session:
        async with session.run_turn("run the stuck tool") as stream:
            async for ev in stream:
                if isinstance(ev, ToolCallStarted):
                    break
        roles = [m.role for m in session.transcript]
        assert roles == ["user", "assistant"]
        assert session.transcript[1].tool_calls == ()  # the unanswered call was stripped


async def test_a_turn_cut_off_while_its_tool_runs_still_writes_the_trace_line_of_its_request(
    tmp_path: Path,
) -> None:
    # The line of a request that calls tools waits for the turn's next one; a turn that ends
    # before that request (here: the caller leaves the stream) must write it anyway.
    async def stuck(_: str) -> ToolOutput:
        await anyio.sleep_forever()
        return ToolOutput("never")

    trace_path = tmp_path / "trace.jsonl"
    model = ScriptedModel([call_tool("stuck", {})])
    tool = RawTool(ToolSpec("stuck", "Never returns."), stuck)
    async with make_session(model, extra_tools=[tool], trace=TraceWriter(trace_path)) as session:
        async with session.run_turn("run the stuck tool") as stream:
            async for ev in stream:
                if isinstance(ev, ToolCallStarted):
                    break
        records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace_path)))
    assert [(r.purpose, len(r.messages)) for r in records] == [("turn", 1)]


async def test_a_second_turn_while_one_runs_is_refused() -> None:
    model = ScriptedModel([say("slow answer")])
    async with make_session(model) as session, session.run_turn("first") as stream:
        with pytest.raises(SessionError, match="already running"):
            async with session.run_turn("second"):
                pass
        async for _ in stream:
            pass


async def test_every_request_is_traced_with_its_slot_map_and_usage(tmp_path: Path) -> None:
    trace_path = tmp_path / "trace.jsonl"
    usage = Usage(input=90, output=5, cache_read=10)
    model = ScriptedModel(
        [call_tool("memory", {"target": "user", "content": "tea"}, usage=usage), say("done", usage=usage)]
    )
    async with make_session(model, memory=FakeMemory(), trace=TraceWriter(trace_path)) as session:
        events = await run_turn(session, "remember tea")
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace_path)))
    assert [r.purpose for r in records] == ["turn", "turn"]
    assert all(r.system == session.prompt.text for r in records)
    slot_names = [s.name for s in records[0].slots]
    assert slot_names[:2] == ["identity", "tool_guidance"]
    ident = records[0].slots[0]
    assert records[0].system[ident.start : ident.end] == "You are a test agent."
    assert records[0].usage is not None
    assert records[0].usage.cache_read == 10
    assert [t.name for t in records[0].tools] == ["memory"]
    assert len(records[1].messages) == 3
    reported = [e for e in events if isinstance(e, UsageReported)]
    assert [e.reported for e in reported] == [True, True]


async def test_connection_errors_are_not_swallowed() -> None:
    model = ScriptedModel([fail(ModelConnectionError("refused"))])
    async with make_session(model) as session:
        with pytest.raises(ModelConnectionError):
            await run_turn(session, "hello")
        assert [m.role for m in session.transcript] == ["user"]
        assert json.dumps([m.content for m in session.transcript]) == '["hello"]'


async def test_injected_messages_are_persisted_sent_next_turn_and_refused_mid_turn() -> None:
    recorder = RecordingRecorder()
    model = ScriptedModel([say("noted")])
    recorded = [Message("user", "Ana: I adopted a cat."), Message("assistant", "Ben: Lovely!")]
    async with make_session(model, recorder=recorder) as session:
        await session.inject(recorded)
        assert session.transcript == tuple(recorded)
        assert recorder.messages[session.session_id] == recorded
        assert model.requests == []  # no model call
        async with session.run_turn("And you?") as events:
            with pytest.raises(SessionError, match="turn is running"):
                await session.inject([Message("user", "too late")])
            async for _ in events:
                pass
    assert [m.content for m in model.requests[0].messages] == [
        "Ana: I adopted a cat.",
        "Ben: Lovely!",
        "And you?",
    ]


async def test_an_empty_reply_is_asked_again_once_then_reported() -> None:
    model = ScriptedModel([say(""), say("here it is")])
    async with make_session(model) as session:
        events = await run_turn(session, "what editor do I use?")
        assert [m.content for m in session.transcript] == ["what editor do I use?", "here it is"]
    assert len(model.requests) == 2
    assert not any(isinstance(e, Warning) for e in events)
    twice = ScriptedModel([say(""), say("")])
    async with make_session(twice) as session:
        events = await run_turn(session, "hello?")
    assert any(isinstance(e, Warning) and "empty reply twice" in e.message for e in events)


async def test_a_call_written_as_text_is_a_refused_call_and_never_the_answer() -> None:
    leaked = 'Saving: {"name": "memory", "arguments": {"target": "user", "content": "x"'  # cut short
    model = ScriptedModel([say(leaked), say("<|im_start|>assistant"), say("Noted.")])
    async with make_session(model, memory=FakeMemory()) as session:
        events = await run_turn(session, "I use neovim")
        transcript = session.transcript
    ended = [e for e in events if isinstance(e, TurnEnded)][-1]
    assert ended.final_text == "Noted."
    refused = [e for e in events if isinstance(e, ToolResultReady)]
    assert len(refused) == 2 and all(r.is_error for r in refused)
    assert "written as text" in refused[0].content and "template markup" in refused[1].content
    assert not any(leaked in m.content or "<|im_start|>" in m.content for m in transcript)
    # the model heard why: its next request carried the refusal
    assert "could not be read" in model.requests[1].messages[-1].content


async def test_a_readable_call_inside_prose_runs_as_the_call_it_means() -> None:
    # Qwen2.5-Coder-1.5B copies its template's doubled braces and talks around the call
    written = (
        'I will save it.\n{{"name": "memory", "arguments": {"target": "user", "content": "Uses neovim"}}}'
    )
    model = ScriptedModel([say(written), say("I'll remember that.")])
    memory = FakeMemory()
    async with make_session(model, memory=memory) as session:
        events = await run_turn(session, "I use neovim")
        transcript = session.transcript
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert [(r.name, r.is_error) for r in results] == [("memory", False)]
    assert transcript[1].tool_calls[0].name == "memory" and not transcript[1].content
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown == "I will save it.\nI'll remember that."


@pytest.mark.parametrize("chunks", [1, 7, 400])
async def test_streamed_text_never_shows_markup_or_a_call_written_as_text(chunks: int) -> None:
    leaked = 'Let me save that. {"name": "memory", "arguments": {"target": "user", "content": "x"}}'
    model = ScriptedModel(
        [say(leaked), say("Saved <|im_start|>assistant"), say("Noted: if a < b, use {b}.")],
        stream_chunks=chunks,
    )
    async with make_session(model, memory=FakeMemory()) as session:
        events = await run_turn(session, "I use neovim")
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert '{"name"' not in shown and "<|" not in shown
    # prose before the markup streams; the answer arrives whole, its `<` and `{` included
    assert shown == "Let me save that. Saved Noted: if a < b, use {b}."


async def test_held_back_json_that_is_no_call_is_shown_when_the_reply_ends() -> None:
    answer = 'Here: {"name": "Ana", "editor": "neovim"}'
    model = ScriptedModel([say(answer)], stream_chunks=50)
    async with make_session(model) as session:
        events = await run_turn(session, "my profile as JSON?")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == answer


def _notes(name: str, seen: list[str]) -> RawTool:
    async def run(arguments: str) -> ToolOutput:
        seen.append(arguments)
        return ToolOutput('{"success": true}')

    schema: JsonObject = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "remove"]},
            "content": {"type": "string"},
        },
    }
    return RawTool(ToolSpec(name, "Keep notes.", schema), run)


async def test_a_reply_that_is_only_a_readable_call_runs_as_that_call() -> None:
    memory = FakeMemory()
    model = ScriptedModel(
        [
            say(
                '```json\n{"name": "memory", "arguments": {"target": "user", "content": "uses neovim"}}\n```'
            ),
            say("Noted."),
        ],
        stream_chunks=9,
    )
    async with make_session(model, memory=memory) as session:
        events = await run_turn(session, "I use neovim")
        transcript = session.transcript
    assert memory.entries == ["uses neovim"]
    assert [r.is_error for r in events if isinstance(r, ToolResultReady)] == [False]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Noted."
    # the transcript shows the model a well-formed call from now on
    [call] = transcript[1].tool_calls
    assert (transcript[1].content, call.name) == ("", "memory")
    assert json.loads(call.arguments) == {"target": "user", "content": "uses neovim"}


async def test_a_call_naming_an_action_runs_the_one_tool_that_has_it_and_is_refused_when_two_do() -> None:
    seen: list[str] = []
    model = ScriptedModel(
        [say('{"name": "add", "arguments": {"content": "Team: Tidewater"}}'), say("Saved.")]
    )
    async with make_session(model, extra_tools=[_notes("notes", seen)]) as session:
        await run_turn(session, "my team is Tidewater")
    assert [json.loads(a) for a in seen] == [{"action": "add", "content": "Team: Tidewater"}]
    both: list[str] = []
    model = ScriptedModel([say('{"name": "add", "arguments": {"content": "x"}}'), say("Sorry.")])
    async with make_session(model, extra_tools=[_notes("notes", both), _notes("todo", both)]) as session:
        events = await run_turn(session, "note x")
    assert both == []  # ambiguous: nothing ran
    [refused] = [e for e in events if isinstance(e, ToolResultReady)]
    assert (
        refused.is_error
        and "'add', which is not a tool" in refused.content
        and "notes, todo" in refused.content
    )
