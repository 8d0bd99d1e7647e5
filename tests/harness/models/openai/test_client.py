"""OpenAIClient wire tests over httpx.MockTransport: exact bodies, parsing, streaming, errors."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from pydantic import JsonValue

from harness.errors import (
    ModelAuthError,
    ModelRateLimitError,
    ModelRequestError,
    ModelResponseError,
    ModelServerError,
)
from harness.models import OpenAIClient, RetryingClient
from harness.models._stream import MAX_REPLY_CHARS
from harness.types import JsonObject, Message, ModelRequest, ToolCall, ToolSpec, Usage
from tests.harness.models.recorder import Recorder, stream_all

Handler = Callable[[httpx.Request], httpx.Response]
RAW_ARGS = '{"action":  "add", "content": "likes tea"}'  # odd spacing must survive verbatim

TOOLS = (
    ToolSpec(
        name="memory",
        description="Save durable facts.",
        parameters={"type": "object", "properties": {"action": {"type": "string"}}},
    ),
)
TRANSCRIPT = (
    Message(role="user", content="remember I like tea", api_content="remember I like tea\n<recall/>"),
    Message(
        role="assistant", content="", tool_calls=(ToolCall(id="call_1", name="memory", arguments=RAW_ARGS),)
    ),
    Message(role="tool", content='{"ok": true}', tool_call_id="call_1", name="memory"),
    Message(role="assistant", content="Saved."),
    Message(role="user", content="thanks"),
)


def client_for(
    handler: Handler,
    *,
    api_key: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    clock: Callable[[], float] = lambda: 0.0,
) -> OpenAIClient:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIClient(
        http,
        base_url="http://llm.test/v1/",
        model="gpt-test",
        api_key=api_key,
        api_key_env=api_key_env,
        clock=clock,
    )


def completion(message: JsonObject, usage: JsonObject | None = None, **extra: JsonValue) -> httpx.Response:
    data: JsonObject = {
        "id": "x",
        "model": "gpt-test-0501",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        **extra,
    }
    if usage is not None:
        data["usage"] = usage
    return httpx.Response(200, json=data)


def sse(*chunks: JsonValue | str) -> httpx.Response:
    lines = [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks]
    return httpx.Response(200, content="".join(lines).encode(), headers={"content-type": "text/event-stream"})


async def test_request_body_maps_system_messages_tool_calls_and_tool_results_exactly() -> None:
    rec = Recorder(completion({"role": "assistant", "content": "ok"}))
    client = client_for(rec, api_key="sk-1")
    request = ModelRequest(
        system="SYS", messages=TRANSCRIPT, tools=TOOLS, tool_choice="auto", max_tokens=64, temperature=0.2
    )
    await client.complete(request)

    sent = rec.requests[0]
    assert str(sent.url) == "http://llm.test/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-1"
    assert rec.body() == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "SYS"},
            {"role": "user", "content": "remember I like tea\n<recall/>"},
            {
                "role": "assistant",
                "content": "",  # a string, never null: llama-cpp-python rejects null
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "memory", "arguments": RAW_ARGS},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true}'},
            {"role": "assistant", "content": "Saved."},
            {"role": "user", "content": "thanks"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "memory",
                    "description": "Save durable facts.",
                    "parameters": {"type": "object", "properties": {"action": {"type": "string"}}},
                },
            }
        ],
        "tool_choice": "auto",
        "max_tokens": 64,
        "temperature": 0.2,
    }


async def test_the_same_request_serializes_to_identical_bytes_every_time() -> None:
    rec = Recorder(*(completion({"role": "assistant", "content": "ok"}) for _ in range(2)))
    client = client_for(rec)
    request = ModelRequest(system="SYS ünïcode", messages=TRANSCRIPT, tools=TOOLS)
    await client.complete(request)
    await client.complete(request)
    assert rec.requests[0].content == rec.requests[1].content
    assert "ünïcode".encode() in rec.requests[0].content  # not \\u-escaped


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("none", "none"),
        ("required", "required"),
        ("memory", {"type": "function", "function": {"name": "memory"}}),
    ],
)
async def test_tool_choice_maps_to_the_wire_form(choice: str, wire: JsonValue) -> None:
    rec = Recorder(completion({"role": "assistant", "content": "ok"}))
    await client_for(rec).complete(
        ModelRequest(system="s", messages=TRANSCRIPT, tools=TOOLS, tool_choice=choice)
    )
    assert rec.body()["tool_choice"] == wire


async def test_tool_choice_naming_an_unknown_tool_fails_before_sending() -> None:
    rec = Recorder()
    with pytest.raises(ModelRequestError, match="'search' names no tool"):
        await client_for(rec).complete(
            ModelRequest(system="s", messages=(), tools=TOOLS, tool_choice="search")
        )
    assert rec.requests == []


async def test_without_tools_neither_tools_nor_tool_choice_is_sent() -> None:
    rec = Recorder(completion({"role": "assistant", "content": "ok"}))
    await client_for(rec).complete(ModelRequest(system="", messages=(Message(role="user", content="hi"),)))
    assert rec.body() == {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


async def test_llama_cpp_python_tool_call_reply_is_parsed_with_raw_arguments_and_zero_cache() -> None:
    # chatml-function-calling: content null, legacy function_call beside tool_calls, bare usage.
    message: JsonObject = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "memory", "arguments": '{ "action": "add" }'},
        "tool_calls": [
            {
                "id": "call__0_memory_cmpl-1",
                "type": "function",
                "function": {"name": "memory", "arguments": '{ "action": "add" }'},
            }
        ],
    }
    usage: JsonObject = {"prompt_tokens": 300, "completion_tokens": 9, "total_tokens": 309}
    rec = Recorder(completion(message, usage))
    reply = await client_for(rec).complete(ModelRequest(system="s", messages=TRANSCRIPT, tools=TOOLS))
    assert reply.message.tool_calls == (ToolCall("call__0_memory_cmpl-1", "memory", '{ "action": "add" }'),)
    assert reply.message.content == ""
    assert reply.usage == Usage(input=300, output=9)
    assert reply.model == "gpt-test-0501"


async def test_streaming_sends_stream_flags_and_accumulates_text_and_interleaved_tool_calls() -> None:
    rec = Recorder(
        sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]},
            {"choices": [{"index": 0, "delta": {"content": "check."}}]},
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "id": "a", "type": "function", "function": {"name": "memory"}},
                                {"index": 1, "id": "b", "type": "function", "function": {"name": "search"}},
                            ]
                        },
                    }
                ]
            },
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": '{"q":'}}]}}
                ]
            },
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}
                ]
            },
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": ' "x"}'}}]}}
                ]
            },
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            {
                "choices": [],
                "usage": {
                    "prompt_tokens": 2000,
                    "completion_tokens": 30,
                    "prompt_tokens_details": {"cached_tokens": 1920},
                    "completion_tokens_details": {"reasoning_tokens": 12},
                },
            },
            "[DONE]",
        )
    )
    texts, reply = await stream_all(
        client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT, tools=TOOLS)
    )
    body = rec.body()
    assert (body["stream"], body["stream_options"]) == (True, {"include_usage": True})
    assert rec.requests[0].headers["accept"] == "text/event-stream"
    assert texts == ["Let me ", "check."]
    assert reply.message.content == "Let me check."
    assert reply.message.tool_calls == (ToolCall("a", "memory", "{}"), ToolCall("b", "search", '{"q": "x"}'))
    assert reply.finish_reason == "tool_calls"
    assert reply.usage == Usage(input=80, output=30, cache_read=1920, reasoning=12)


async def test_llama_cpp_python_stream_repeating_id_and_name_on_every_chunk_is_not_doubled() -> None:
    def chunk(args: str) -> JsonObject:
        call: JsonObject = {"index": 0, "id": "call__0_memory_x", "type": "function"}
        call["function"] = {"name": "memory", "arguments": args}
        return {"model": "smol", "choices": [{"index": 0, "delta": {"content": None, "tool_calls": [call]}}]}

    rec = Recorder(
        sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": None}}]},
            chunk('{"action"'),
            chunk(': "add"}'),
            {"choices": [{"index": 0, "delta": {"tool_calls": None}, "finish_reason": "tool_calls"}]},
            "[DONE]",
        )
    )
    texts, reply = await stream_all(
        client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT, tools=TOOLS)
    )
    assert texts == []
    assert reply.message.tool_calls == (ToolCall("call__0_memory_x", "memory", '{"action": "add"}'),)
    assert reply.usage is None  # llama-cpp-python streams no usage
    assert reply.model == "smol"


async def test_a_stream_with_finish_reason_but_no_done_is_accepted() -> None:
    rec = Recorder(sse({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}))
    _, reply = await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))
    assert reply.message.content == "hi"


async def test_a_truncated_stream_is_a_response_error_that_says_what_arrived() -> None:
    rec = Recorder(sse({"choices": [{"index": 0, "delta": {"content": "hal"}}]}))
    with pytest.raises(
        ModelResponseError, match=r"ended before the reply was complete \(1 chunks, 3 characters"
    ):
        await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))


async def test_a_stream_chunk_that_is_not_json_is_a_response_error_quoting_it() -> None:
    rec = Recorder(sse({"choices": [{"index": 0, "delta": {"content": "a"}}]}, '{"choices": [tru'))
    with pytest.raises(ModelResponseError, match=r"chunk #2 is not valid JSON: '\{\"choices\": \[tru'"):
        await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))


async def test_a_non_sse_body_on_a_stream_is_reported_as_such() -> None:
    html = httpx.Response(
        200, content=b"<html>\n<body>gateway page</body>\n", headers={"content-type": "text/html"}
    )
    with pytest.raises(ModelResponseError, match="not server-sent events, starting with '<html>'"):
        await stream_all(client_for(Recorder(html)), ModelRequest(system="s", messages=TRANSCRIPT))


async def test_a_server_that_ignores_stream_and_answers_json_still_streams_one_reply() -> None:
    rec = Recorder(completion({"role": "assistant", "content": "whole"}, {"prompt_tokens": 5}))
    texts, reply = await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))
    assert texts == ["whole"]
    assert reply.message.content == "whole"


async def test_an_error_chunk_mid_stream_is_a_server_error() -> None:
    rec = Recorder(sse({"error": {"message": "upstream overloaded", "code": 502}}))
    with pytest.raises(ModelServerError, match="upstream overloaded"):
        await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))


async def test_malformed_json_reply_is_a_response_error_quoting_the_body() -> None:
    rec = Recorder(httpx.Response(200, content=b'{"choices": [oops'))
    with pytest.raises(ModelResponseError, match=r"invalid JSON: '\{\"choices\": \[oops'"):
        await client_for(rec).complete(ModelRequest(system="s", messages=TRANSCRIPT))


async def test_a_reply_without_choices_is_a_response_error() -> None:
    rec = Recorder(httpx.Response(200, json={"object": "chat.completion"}))
    with pytest.raises(ModelResponseError, match="no choices"):
        await client_for(rec).complete(ModelRequest(system="s", messages=TRANSCRIPT))


async def test_401_is_an_auth_error_naming_the_key_variable_and_is_sent_once() -> None:
    rec = Recorder(
        httpx.Response(401, json={"error": {"message": "Incorrect API key", "type": "invalid_request"}})
    )
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    client = RetryingClient(client_for(rec, api_key_env="MY_LLM_KEY"), max_attempts=5, sleep=sleep)
    with pytest.raises(ModelAuthError, match=r"HTTP 401.*Incorrect API key.*\$MY_LLM_KEY") as info:
        await client.complete(ModelRequest(system="s", messages=TRANSCRIPT))
    assert info.value.status == 401
    assert len(rec.requests) == 1
    assert sleeps == []


async def test_429_with_retry_after_is_retried_after_exactly_that_delay() -> None:
    rec = Recorder(
        httpx.Response(429, headers={"retry-after": "3"}, json={"error": {"message": "rate limited"}}),
        completion({"role": "assistant", "content": "ok"}),
    )
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    reply = await RetryingClient(client_for(rec), sleep=sleep).complete(ModelRequest(system="s", messages=()))
    assert reply.message.content == "ok"
    assert sleeps == [3.0]
    assert len(rec.requests) == 2


async def test_429_retry_after_as_an_http_date_is_converted_with_the_injected_clock() -> None:
    rec = Recorder(
        httpx.Response(429, headers={"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, json={}),
    )
    client = client_for(rec, clock=lambda: 1445412480.0)  # 07:28:00 GMT that day
    with pytest.raises(ModelRateLimitError, match="retry after 10 s") as info:
        await client.complete(ModelRequest(system="s", messages=()))
    assert info.value.retry_after == 10.0


async def test_other_4xx_is_a_request_error_carrying_the_provider_message() -> None:
    rec = Recorder(httpx.Response(400, json={"error": {"message": "max_tokens is too large"}}))
    with pytest.raises(ModelRequestError, match=r"HTTP 400.*max_tokens is too large"):
        await client_for(rec).complete(ModelRequest(system="s", messages=()))


async def test_fastapi_validation_detail_is_quoted_in_the_request_error() -> None:
    rec = Recorder(
        httpx.Response(422, json={"detail": [{"loc": ["body", "messages"], "msg": "field required"}]})
    )
    with pytest.raises(ModelRequestError, match="field required"):
        await client_for(rec).complete(ModelRequest(system="s", messages=()))


async def test_with_stream_with_tools_off_a_request_offering_tools_is_sent_unstreamed() -> None:
    rec = Recorder(
        completion({"role": "assistant", "content": "no stream"}),
        sse({"choices": [{"index": 0, "delta": {"content": "streamed"}, "finish_reason": "stop"}]}, "[DONE]"),
    )
    http = httpx.AsyncClient(transport=httpx.MockTransport(rec))
    client = OpenAIClient(http, base_url="http://llm.test/v1", model="smol", stream_with_tools=False)
    texts, reply = await stream_all(client, ModelRequest(system="s", messages=TRANSCRIPT, tools=TOOLS))
    assert (texts, reply.message.content) == (["no stream"], "no stream")
    assert "stream" not in rec.body(0)
    texts, _ = await stream_all(client, ModelRequest(system="s", messages=TRANSCRIPT))
    assert texts == ["streamed"]
    assert rec.body(1)["stream"] is True


def test_tool_results_can_be_sent_as_user_messages_for_templates_that_drop_tool_roles() -> None:
    from harness.models.openai._wire import build_body
    from harness.types import Message, ModelRequest, ToolCall

    request = ModelRequest(
        system="s",
        messages=(
            Message("user", "hi"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "memory", "{}"),)),
            Message("tool", '{"success": false}', tool_call_id="c1", name="memory"),
        ),
    )
    native = build_body(request, model="m", stream=False)
    as_user = build_body(request, model="m", stream=False, tool_results="as_user")
    assert native["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": '{"success": false}'}  # type: ignore[index]  # JSON list
    assert as_user["messages"][-1] == {  # type: ignore[index]  # JSON list
        "role": "user",
        "content": '[result of tool call memory c1]\n{"success": false}',
    }


async def test_a_stream_whose_chunks_all_have_empty_choices_is_an_error_not_an_empty_answer() -> None:
    rec = Recorder(sse({"choices": []}, {"choices": [], "usage": {"prompt_tokens": 3}}, "[DONE]"))
    with pytest.raises(ModelResponseError, match=r"without any choice \(2 chunks"):
        await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))


async def test_an_empty_choice_that_finishes_is_still_an_accepted_empty_answer() -> None:
    rec = Recorder(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"))
    _, reply = await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))
    assert (reply.message.content, reply.finish_reason) == ("", "stop")


async def test_a_streamed_reply_of_21_megabytes_is_cut_at_the_reply_cap_and_finishes_as_length() -> None:
    piece = "y" * 100_000
    chunks: list[JsonValue | str] = [{"choices": [{"index": 0, "delta": {"content": piece}}]}] * 216
    rec = Recorder(sse(*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"))
    texts, reply = await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))
    assert len(reply.message.content) == MAX_REPLY_CHARS
    assert sum(len(t) for t in texts) == MAX_REPLY_CHARS
    assert reply.finish_reason == "length"


async def test_a_non_streamed_reply_over_the_cap_is_cut_too() -> None:
    rec = Recorder(completion({"role": "assistant", "content": "z" * (MAX_REPLY_CHARS + 5)}))
    reply = await client_for(rec).complete(ModelRequest(system="s", messages=TRANSCRIPT))
    assert len(reply.message.content) == MAX_REPLY_CHARS
    assert reply.finish_reason == "length"


async def test_one_server_sent_event_that_never_ends_is_refused() -> None:
    body = ("data: " + "q" * 1_000_000 + "\n") * 9  # 9 data lines, no blank line to end the event
    rec = Recorder(httpx.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"}))
    with pytest.raises(ModelResponseError, match="grew past 8,000,000 characters"):
        await stream_all(client_for(rec), ModelRequest(system="s", messages=TRANSCRIPT))
