"""AnthropicClient wire tests over httpx.MockTransport: bodies, cache breakpoints, streaming, errors."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import JsonValue

from harness.errors import ModelAuthError, ModelRateLimitError, ModelResponseError, ModelServerError
from harness.models import AnthropicClient
from harness.models._stream import MAX_REPLY_CHARS
from harness.models.anthropic._wire import CacheTTL
from harness.types import (
    CacheBreakpoint,
    JsonObject,
    Message,
    ModelRequest,
    ToolCall,
    ToolSpec,
    Usage,
)
from tests.harness.models.recorder import Recorder, stream_all

EPHEMERAL: JsonObject = {"type": "ephemeral"}
TOOLS = (ToolSpec(name="memory", description="Save facts.", parameters={"type": "object"}),)


def ok(text: str = "ok", usage: JsonObject | None = None) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-20250101",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": usage or {"input_tokens": 1, "output_tokens": 1},
        },
    )


def client_for(rec: Recorder, *, cache_ttl: CacheTTL = "5m") -> AnthropicClient:
    http = httpx.AsyncClient(transport=httpx.MockTransport(rec))
    return AnthropicClient(
        http, base_url="https://anthropic.test", model="claude-test", api_key="sk-ant", cache_ttl=cache_ttl
    )


def user(text: str) -> Message:
    return Message(role="user", content=text)


def markers(body: JsonObject) -> int:
    """How many cache_control markers the body carries anywhere."""
    return json.dumps(body).count('"cache_control"')


async def test_body_maps_tools_system_tool_calls_and_merges_tool_results_into_one_user_turn() -> None:
    rec = Recorder(ok())
    transcript = (
        Message(role="user", content="save two things", api_content="save two things\n<recall/>"),
        Message(
            role="assistant",
            content="On it.",
            tool_calls=(
                ToolCall("tu_1", "memory", '{"action": "add", "content": "tea"}'),
                ToolCall("tu_2", "memory", "{not json"),
            ),
        ),
        Message(role="tool", content="saved", tool_call_id="tu_1", name="memory"),
        Message(role="tool", content="error: bad arguments", tool_call_id="tu_2", name="memory"),
        user("and now?"),
    )
    request = ModelRequest(
        system="SYS", messages=transcript, tools=TOOLS, tool_choice="required", temperature=0.0
    )
    reply = await client_for(rec).complete(request)

    sent = rec.requests[0]
    assert str(sent.url) == "https://anthropic.test/v1/messages"
    assert (sent.headers["x-api-key"], sent.headers["anthropic-version"]) == ("sk-ant", "2023-06-01")
    assert rec.body() == {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "SYS", "cache_control": EPHEMERAL}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "save two things\n<recall/>", "cache_control": EPHEMERAL}
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "On it."},
                    {
                        "type": "tool_use",
                        "id": "tu_1",
                        "name": "memory",
                        "input": {"action": "add", "content": "tea"},
                    },
                    # unparseable arguments: sent as {} (the tool-error result below explains)
                    {
                        "type": "tool_use",
                        "id": "tu_2",
                        "name": "memory",
                        "input": {},
                        "cache_control": EPHEMERAL,
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "saved"},
                    {"type": "tool_result", "tool_use_id": "tu_2", "content": "error: bad arguments"},
                    {"type": "text", "text": "and now?", "cache_control": EPHEMERAL},
                ],
            },
        ],
        "tools": [{"name": "memory", "description": "Save facts.", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any"},
        "temperature": 0.0,
    }
    assert reply.breakpoints == (
        CacheBreakpoint(at="system", system_chars=3),
        CacheBreakpoint(at="message", index=0),
        CacheBreakpoint(at="message", index=1),
        CacheBreakpoint(at="message", index=4),
    )
    assert reply.cache_ttl == "5m"


@pytest.mark.parametrize(
    ("choice", "wire"),
    [("auto", {"type": "auto"}), ("none", {"type": "none"}), ("memory", {"type": "tool", "name": "memory"})],
)
async def test_tool_choice_maps_to_anthropic_forms(choice: str, wire: JsonValue) -> None:
    rec = Recorder(ok())
    await client_for(rec).complete(
        ModelRequest(system="s", messages=(user("hi"),), tools=TOOLS, tool_choice=choice)
    )
    assert rec.body()["tool_choice"] == wire


async def test_max_tokens_comes_from_the_request_when_set() -> None:
    rec = Recorder(ok())
    await client_for(rec).complete(ModelRequest(system="s", messages=(user("hi"),), max_tokens=77))
    assert rec.body()["max_tokens"] == 77


async def test_a_stable_prefix_splits_the_system_prompt_into_two_marked_blocks() -> None:
    rec = Recorder(ok())
    system = "FROZEN PREFIX|volatile tail"
    messages = tuple(
        user(f"m{i}") if i % 2 == 0 else Message(role="assistant", content=f"a{i}") for i in range(7)
    )
    reply = await client_for(rec).complete(
        ModelRequest(system=system, messages=messages, stable_prefix_chars=14)
    )
    body = rec.body()
    assert body["system"] == [
        {"type": "text", "text": "FROZEN PREFIX|", "cache_control": EPHEMERAL},
        {"type": "text", "text": "volatile tail", "cache_control": EPHEMERAL},
    ]
    assert markers(body) == 4
    assert reply.breakpoints == (
        CacheBreakpoint(at="system", system_chars=14),
        CacheBreakpoint(at="system", system_chars=len(system)),
        CacheBreakpoint(at="message", index=5),
        CacheBreakpoint(at="message", index=6),
    )


@pytest.mark.parametrize("cut", [None, 0, 5, 99])
async def test_a_stable_prefix_that_does_not_split_the_system_leaves_one_system_block(
    cut: int | None,
) -> None:
    rec = Recorder(ok())
    await client_for(rec).complete(
        ModelRequest(system="short", messages=(user("hi"),), stable_prefix_chars=cut)
    )
    assert rec.body()["system"] == [{"type": "text", "text": "short", "cache_control": EPHEMERAL}]


async def test_never_more_than_four_breakpoints_in_a_long_conversation() -> None:
    rec = Recorder(ok())
    messages = tuple(
        user(f"u{i}") if i % 2 == 0 else Message(role="assistant", content=f"a{i}") for i in range(41)
    )
    reply = await client_for(rec).complete(ModelRequest(system="sys", messages=messages))
    body = rec.body()
    assert markers(body) == 4
    assert [b.index for b in reply.breakpoints if b.at == "message"] == [38, 39, 40]
    wire = body["messages"]
    assert isinstance(wire, list)
    marked = [i for i, m in enumerate(wire) if "cache_control" in json.dumps(m)]
    assert marked == [38, 39, 40]


async def test_without_a_system_prompt_the_last_four_messages_carry_the_markers() -> None:
    rec = Recorder(ok())
    messages = tuple(
        user(f"u{i}") if i % 2 == 0 else Message(role="assistant", content=f"a{i}") for i in range(9)
    )
    reply = await client_for(rec).complete(ModelRequest(system="", messages=messages))
    assert "system" not in rec.body()
    assert [b.index for b in reply.breakpoints] == [5, 6, 7, 8]


async def test_one_hour_ttl_puts_ttl_on_every_marker_and_on_the_reply() -> None:
    rec = Recorder(ok())
    reply = await client_for(rec, cache_ttl="1h").complete(ModelRequest(system="s", messages=(user("hi"),)))
    assert rec.requests[0].content.count(b'"cache_control":{"type":"ephemeral","ttl":"1h"}') == 2
    assert reply.cache_ttl == "1h"


async def test_consecutive_same_role_messages_are_merged() -> None:
    rec = Recorder(ok())
    messages = (
        user("one"),
        user("two"),
        Message(role="assistant", content="x"),
        Message(role="assistant", content="y"),
    )
    await client_for(rec).complete(ModelRequest(system="s", messages=messages))
    wire = rec.body()["messages"]
    assert isinstance(wire, list)
    assert [m["role"] for m in wire if isinstance(m, dict)] == ["user", "assistant"]
    assert json.dumps(wire[0]).count('"type": "text"') == 2


async def test_reply_parses_text_tool_use_and_exclusive_usage() -> None:
    payload: JsonObject = {
        "model": "claude-test-20250101",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Saving."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "memory",
                "input": {"action": "add", "content": "ü"},
            },
        ],
        "stop_reason": "tool_use",
        "usage": {
            "input_tokens": 12,
            "output_tokens": 40,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 250,
        },
    }
    reply = await client_for(Recorder(httpx.Response(200, json=payload))).complete(
        ModelRequest(system="s", messages=(user("hi"),))
    )
    assert reply.message.content == "Saving."
    assert reply.message.tool_calls == (ToolCall("toolu_1", "memory", '{"action": "add", "content": "ü"}'),)
    assert reply.usage == Usage(input=12, output=40, cache_read=3000, cache_write=250)
    assert reply.usage.prompt == 3262
    assert reply.finish_reason == "tool_use"


def sse(*events: tuple[str, JsonObject]) -> httpx.Response:
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


STREAM: list[tuple[str, JsonObject]] = [
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "model": "claude-test-20250101",
                "usage": {
                    "input_tokens": 7,
                    "cache_read_input_tokens": 900,
                    "cache_creation_input_tokens": 60,
                    "output_tokens": 1,
                },
            },
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    ("ping", {"type": "ping"}),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let"}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " me"}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_9", "name": "memory", "input": {}},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"act'},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'ion": "add"}'},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 25}},
    ),
    ("message_stop", {"type": "message_stop"}),
]


async def test_stream_assembles_text_and_tool_input_and_merges_usage() -> None:
    rec = Recorder(sse(*STREAM))
    texts, reply = await stream_all(client_for(rec), ModelRequest(system="s", messages=(user("hi"),)))
    assert rec.body()["stream"] is True
    assert texts == ["Let", " me"]
    assert reply.message.content == "Let me"
    assert reply.message.tool_calls == (ToolCall("toolu_9", "memory", '{"action": "add"}'),)
    assert reply.usage == Usage(input=7, output=25, cache_read=900, cache_write=60)
    assert reply.breakpoints == (
        CacheBreakpoint(at="system", system_chars=1),
        CacheBreakpoint(at="message", index=0),
    )
    assert reply.model == "claude-test-20250101"


async def test_an_overloaded_error_event_mid_stream_is_a_server_error() -> None:
    error: JsonObject = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    rec = Recorder(sse(STREAM[0], ("error", error)))
    with pytest.raises(ModelServerError, match="Overloaded") as info:
        await stream_all(client_for(rec), ModelRequest(system="s", messages=(user("hi"),)))
    assert info.value.status == 529


async def test_a_truncated_stream_is_a_clear_response_error() -> None:
    rec = Recorder(sse(*STREAM[:5]))
    with pytest.raises(ModelResponseError, match=r"stream ended before the reply was complete \(5 events"):
        await stream_all(client_for(rec), ModelRequest(system="s", messages=(user("hi"),)))


async def test_status_529_is_a_server_error_and_401_names_the_anthropic_key() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    rec = Recorder(
        httpx.Response(529, json=overloaded),
        httpx.Response(
            401, json={"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
        ),
        httpx.Response(
            429, headers={"retry-after": "12"}, json={"type": "error", "error": {"type": "rate_limit_error"}}
        ),
    )
    client = client_for(rec)
    request = ModelRequest(system="s", messages=(user("hi"),))
    with pytest.raises(ModelServerError, match="overloaded_error: Overloaded"):
        await client.complete(request)
    with pytest.raises(ModelAuthError, match=r"authentication_error: bad key.*\$ANTHROPIC_API_KEY"):
        await client.complete(request)
    with pytest.raises(ModelRateLimitError) as info:
        await client.complete(request)
    assert info.value.retry_after == 12.0


async def test_a_streamed_reply_over_the_cap_is_cut_and_finishes_as_max_tokens() -> None:
    delta: JsonObject = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "w" * 300_000},
    }
    events = [*STREAM[:3], *[("content_block_delta", delta)] * 5, *STREAM[-2:]]
    rec = Recorder(sse(*events))
    _, reply = await stream_all(client_for(rec), ModelRequest(system="s", messages=(user("hi"),)))
    assert len(reply.message.content) == MAX_REPLY_CHARS
    assert reply.finish_reason == "max_tokens"
