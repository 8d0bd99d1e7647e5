"""Both clients against a real loopback server that fails on cue, through a real httpx client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from harness.errors import (
    ModelConnectionError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)
from harness.models import AnthropicClient, ModelTextDelta, OpenAIClient, ReplyDone, RetryingClient
from harness.models.base import ModelClient
from harness.types import JsonObject, Message, ModelReply, ModelRequest
from tests.harness.models.faultserver import Drip, Drop, FaultServer, Reply, json_reply, sse_reply

REQUEST = ModelRequest(system="You are terse.", messages=(Message(role="user", content="hi"),))
GOOD: JsonObject = {
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 1},
}
SSE_GOOD = [
    'data: {"model":"m","choices":[{"index":0,"delta":{"content":"hel"}}]}',
    'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}',
    "data: [DONE]",
]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    # trust_env=False: a proxy in the environment must not intercept loopback traffic.
    async with httpx.AsyncClient(trust_env=False) as client:
        yield client


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def retrying(inner: ModelClient, sleeps: Sleeps, *, attempts: int = 4) -> RetryingClient:
    return RetryingClient(
        inner, max_attempts=attempts, base_delay_s=1.0, max_delay_s=8.0, sleep=sleeps, random=lambda: 0.5
    )


def openai(http: httpx.AsyncClient, server: FaultServer, *, timeout_s: float = 10.0) -> OpenAIClient:
    return OpenAIClient(http, base_url=server.base_url + "/v1", model="m", timeout_s=timeout_s)


async def collect(client: ModelClient, texts: list[str] | None = None) -> tuple[list[str], ModelReply]:
    """Read a whole stream; text deltas also go into `texts` as they arrive."""
    texts = [] if texts is None else texts
    async with client.stream(REQUEST) as events:
        async for event in events:
            if isinstance(event, ModelTextDelta):
                texts.append(event.text)
            else:
                assert isinstance(event, ReplyDone)
                return texts, event.reply
    raise AssertionError("the stream ended without ReplyDone")


async def test_two_server_errors_then_success_returns_the_reply_after_backing_off(
    http: httpx.AsyncClient,
) -> None:
    sleeps = Sleeps()
    error = json_reply({"error": {"message": "boom"}}, status=500)
    with FaultServer([error, error, json_reply(GOOD)]) as server:
        reply = await retrying(openai(http, server), sleeps).complete(REQUEST)
    assert reply.message.content == "hello"
    assert len(server.requests) == 3
    assert sleeps.delays == [0.5, 1.0]  # full jitter: 0.5 * base * 2**(n-1)


async def test_rate_limit_waits_exactly_the_retry_after_the_server_sent(http: httpx.AsyncClient) -> None:
    sleeps = Sleeps()
    limited = json_reply({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "7"})
    with FaultServer([limited, json_reply(GOOD)]) as server:
        reply = await retrying(openai(http, server), sleeps).complete(REQUEST)
    assert reply.message.content == "hello"
    assert sleeps.delays == [7.0]


async def test_a_body_that_drips_past_the_timeout_raises_model_timeout_error(http: httpx.AsyncClient) -> None:
    body = json.dumps(GOOD).encode()
    drip = Drip(chunks=tuple(body[i : i + 8] for i in range(0, len(body), 8)), interval_s=0.2)
    with FaultServer([drip]) as server, pytest.raises(ModelTimeoutError, match=r"within 0\.5 s"):
        await openai(http, server, timeout_s=0.5).complete(REQUEST)


async def test_a_stream_that_stalls_after_its_first_delta_times_out_and_is_not_retried(
    http: httpx.AsyncClient,
) -> None:
    sleeps = Sleeps()
    first = (SSE_GOOD[0] + "\n\n").encode()
    stall = Drip(chunks=(first, b"data: [DONE]\n\n"), delays=(0.0, 3.0), content_type="text/event-stream")
    with FaultServer([stall, sse_reply(SSE_GOOD)]) as server:
        client = retrying(openai(http, server, timeout_s=0.5), sleeps)
        seen: list[str] = []
        with pytest.raises(ModelTimeoutError):
            await collect(client, seen)
    assert seen == ["hel"]
    assert len(server.requests) == 1  # never replayed once text reached the caller
    assert sleeps.delays == []


async def test_garbage_body_raises_model_response_error_without_retrying(http: httpx.AsyncClient) -> None:
    sleeps = Sleeps()
    with (
        FaultServer([Reply(body=b"<html>\x00not json at all")]) as server,
        pytest.raises(ModelResponseError, match="invalid JSON"),
    ):
        await retrying(openai(http, server), sleeps).complete(REQUEST)
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_a_dropped_connection_is_a_connection_error_and_is_retried(http: httpx.AsyncClient) -> None:
    with FaultServer([Drop()]) as server, pytest.raises(ModelConnectionError, match="connection broke"):
        await openai(http, server).complete(REQUEST)

    sleeps = Sleeps()
    with FaultServer([Drop(), Drop(head=True, partial=b'{"choi'), json_reply(GOOD)]) as server:
        reply = await retrying(openai(http, server), sleeps).complete(REQUEST)
    assert reply.message.content == "hello"
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2


async def test_when_attempts_run_out_the_last_error_is_raised(http: httpx.AsyncClient) -> None:
    sleeps = Sleeps()
    script = [json_reply({"error": {"message": f"failure {n}"}}, status=502 + n) for n in range(3)]
    with (
        FaultServer(script) as server,
        pytest.raises(ModelServerError, match=r"HTTP 504.*failure 2") as info,
    ):
        await retrying(openai(http, server), sleeps, attempts=3).complete(REQUEST)
    assert info.value.status == 504
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2


async def test_openai_stream_from_a_real_server_yields_deltas_then_the_reply(http: httpx.AsyncClient) -> None:
    with FaultServer([sse_reply(SSE_GOOD)]) as server:
        texts, reply = await collect(openai(http, server))
    assert texts == ["hel", "lo"]
    assert reply.message.content == "hello"
    assert server.requests[0].path == "/v1/chat/completions"
    body = server.requests[0].body
    assert isinstance(body, dict)
    assert body["stream"] is True


async def test_a_stream_dropped_mid_body_is_a_connection_error(http: httpx.AsyncClient) -> None:
    partial = (SSE_GOOD[0] + "\n\n").encode()
    with (
        FaultServer([Drop(head=True, partial=partial, content_type="text/event-stream")]) as server,
        pytest.raises(ModelConnectionError),
    ):
        await collect(openai(http, server))


ANTHROPIC_STREAM = [
    'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x",'
    '"usage":{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":1}}}',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    '"content_block":{"type":"text","text":""}}',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    '"delta":{"type":"text_delta","text":"hi there"}}',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    '"usage":{"output_tokens":3}}',
    'event: message_stop\ndata: {"type":"message_stop"}',
]


def anthropic(http: httpx.AsyncClient, server: FaultServer) -> AnthropicClient:
    return AnthropicClient(http, base_url=server.base_url, model="claude-x", api_key="k", timeout_s=10.0)


async def test_anthropic_overloaded_529_is_retried_then_streams(http: httpx.AsyncClient) -> None:
    sleeps = Sleeps()
    overloaded = json_reply(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529
    )
    with FaultServer([overloaded, sse_reply(ANTHROPIC_STREAM)]) as server:
        texts, reply = await collect(retrying(anthropic(http, server), sleeps))
    assert texts == ["hi there"]
    assert reply.usage is not None
    assert (reply.usage.cache_read, reply.usage.output) == (100, 3)
    assert len(server.requests) == 2
    assert server.requests[1].path == "/v1/messages"
    assert server.requests[1].headers["x-api-key"] == "k"


@pytest.mark.parametrize(
    ("client", "lines", "message"),
    [
        pytest.param(openai, SSE_GOOD[:1], "ended before the reply was complete", id="openai"),
        pytest.param(anthropic, ANTHROPIC_STREAM[:3], "no message_stop", id="anthropic"),
    ],
)
async def test_a_truncated_stream_from_a_real_server_is_a_clear_response_error(
    http: httpx.AsyncClient,
    client: Callable[[httpx.AsyncClient, FaultServer], ModelClient],
    lines: list[str],
    message: str,
) -> None:
    with (
        FaultServer([sse_reply(lines)]) as server,
        pytest.raises(ModelResponseError, match=message),
    ):
        await collect(client(http, server))
