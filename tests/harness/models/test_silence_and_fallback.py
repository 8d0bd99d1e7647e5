"""The clients against a real loopback server: a timeout that measures silence (a long prefill
that reports progress is never cut off, a silent server still is), SSE lines capped while they
are read, and the unstreamed fallback for servers that refuse to stream tool calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from harness.errors import ModelResponseError, ModelTimeoutError
from harness.models import ModelTextDelta, OpenAIClient, ReplyDone
from harness.models._stream import PROGRESS_COMMENT, sse_lines
from harness.models.base import ModelEvent, PromptProgress
from harness.types import JsonObject, Message, ModelReply, ModelRequest, ToolSpec
from tests.harness.models.faultserver import Drip, FaultServer, Reply, json_reply, sse_reply

REQUEST = ModelRequest(system="You are terse.", messages=(Message(role="user", content="hi"),))
LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}})
WITH_TOOLS = ModelRequest(
    system="You are terse.", messages=(Message("user", "look up keel"),), tools=(LOOKUP,)
)
SSE_GOOD = [
    'data: {"model":"m","choices":[{"index":0,"delta":{"content":"hel"}}]}',
    'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}',
    "data: [DONE]",
]
CALL_REPLY: JsonObject = {
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"word":"keel"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}
REFUSAL = "Automatic streaming tool choice is not supported"


def _streamed(body: object) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as client:
        yield client


def _client(http: httpx.AsyncClient, server: FaultServer, *, timeout_s: float, silence: bool) -> OpenAIClient:
    return OpenAIClient(
        http, base_url=server.base_url + "/v1", model="m", timeout_s=timeout_s, silence_timeout=silence
    )


async def _events(
    client: OpenAIClient, request: ModelRequest = REQUEST
) -> tuple[list[ModelEvent], ModelReply]:
    seen: list[ModelEvent] = []
    async with client.stream(request) as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, ReplyDone):
                return seen, event.reply
    raise AssertionError("the stream ended without ReplyDone")


def _slow_prefill(steps: int, interval_s: float) -> Drip:
    """A stream whose prefill reports progress every `interval_s`, then the reply."""
    progress = tuple(
        f'{PROGRESS_COMMENT}{{"done": {i * 100}, "total": {steps * 100}}}\n\n'.encode() for i in range(steps)
    )
    reply = "".join(f"{e}\n\n" for e in SSE_GOOD).encode()
    return Drip(chunks=(*progress, reply), interval_s=interval_s, content_type="text/event-stream")


async def test_a_prefill_that_reports_progress_outlasts_a_silence_timeout(http: httpx.AsyncClient) -> None:
    # 10 progress comments 0.25 s apart: 2.5 s in all, never 2 s of silence.
    with FaultServer([_slow_prefill(10, 0.25)]) as server:
        seen, reply = await _events(_client(http, server, timeout_s=2.0, silence=True))
    assert reply.message.content == "hello"
    progress = [e for e in seen if isinstance(e, PromptProgress)]
    assert [p.done for p in progress] == [i * 100 for i in range(10)] and progress[0].total == 1000
    # progress comes first, the text after it
    assert isinstance(seen[-2], ModelTextDelta) and all(isinstance(e, PromptProgress) for e in seen[:10])


async def test_the_same_prefill_is_cut_off_by_a_whole_call_timeout(http: httpx.AsyncClient) -> None:
    with (
        FaultServer([_slow_prefill(10, 0.25)]) as server,
        pytest.raises(ModelTimeoutError, match=r"no complete answer within 1\.2 s"),
    ):
        await _events(_client(http, server, timeout_s=1.2, silence=False))


async def test_a_silent_server_is_still_timed_out_on_silence(http: httpx.AsyncClient) -> None:
    first = f'{PROGRESS_COMMENT}{{"done": 0, "total": 10}}\n\n'.encode()
    stall = Drip(chunks=(first, b"data: [DONE]\n\n"), delays=(0.0, 5.0), content_type="text/event-stream")
    with (
        FaultServer([stall]) as server,
        pytest.raises(ModelTimeoutError, match=r"was silent for 0\.5 s"),
    ):
        await _events(_client(http, server, timeout_s=0.5, silence=True))


async def test_an_unstreamed_reply_kept_alive_by_leading_spaces_is_read_whole(
    http: httpx.AsyncClient,
) -> None:
    body = json.dumps(
        {"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
    ).encode()
    drip = Drip(chunks=(*(b" " for _ in range(8)), body), interval_s=0.25)
    with FaultServer([drip]) as server:
        reply = await _client(http, server, timeout_s=1.5, silence=True).complete(REQUEST)
    assert reply.message.content == "ok"


async def test_an_endless_stream_line_is_refused_not_buffered(http: httpx.AsyncClient) -> None:
    endless = Reply(body=b"data: " + b"x" * 9_000_000, content_type="text/event-stream")
    with (
        FaultServer([endless]) as server,
        pytest.raises(ModelResponseError, match="stream line longer than 8,000,000 characters"),
    ):
        await _events(_client(http, server, timeout_s=30, silence=False))


async def _chunks(*parts: str) -> AsyncIterator[str]:
    for p in parts:
        yield p


@pytest.mark.parametrize(
    ("parts", "lines"),
    [
        (("a\nb\r\nc\rd",), ["a", "b", "c", "d"]),
        (("a\r", "\nb\r", "c\n"), ["a", "b", "c"]),  # a CRLF split across chunks is one ending
        (("da", "ta: x", "\n\n"), ["data: x", ""]),
        (("x\u2028y\n",), ["x\u2028y"]),  # only CR and LF end a line, not Unicode separators
    ],
)
async def test_sse_lines_splits_on_cr_lf_and_crlf_only(parts: tuple[str, ...], lines: list[str]) -> None:
    assert [line async for line in sse_lines(_chunks(*parts), what="t")] == lines


async def test_sse_lines_refuses_a_line_past_its_limit() -> None:
    with pytest.raises(ModelResponseError, match="longer than 10 characters"):
        _ = [line async for line in sse_lines(_chunks("short\n", "y" * 6, "y" * 6), what="t", limit=10)]


async def test_a_stream_refused_for_tools_is_asked_again_unstreamed_and_tools_stay_unstreamed(
    http: httpx.AsyncClient,
) -> None:
    refused = sse_reply([json.dumps({"error": {"message": REFUSAL}}).join(["data: ", ""])])
    with FaultServer(
        [refused, json_reply(CALL_REPLY), json_reply(CALL_REPLY), sse_reply(SSE_GOOD)]
    ) as server:
        client = _client(http, server, timeout_s=10, silence=False)
        _, first = await _events(client, WITH_TOOLS)
        _, second = await _events(client, WITH_TOOLS)
        _, plain = await _events(client)  # no tools: still streamed
    for reply in (first, second):
        (call,) = reply.message.tool_calls
        assert (call.name, json.loads(call.arguments)) == ("lookup", {"word": "keel"})
    assert plain.message.content == "hello"
    assert [_streamed(r.body) for r in server.requests] == [True, False, False, True]


async def test_an_http_refusal_to_stream_tools_falls_back_too(http: httpx.AsyncClient) -> None:
    refused = json_reply({"error": {"message": REFUSAL, "type": "invalid_request_error"}}, status=400)
    with FaultServer([refused, json_reply(CALL_REPLY)]) as server:
        _, reply = await _events(_client(http, server, timeout_s=10, silence=False), WITH_TOOLS)
    assert reply.message.tool_calls[0].name == "lookup"


async def test_without_tools_a_broken_stream_is_not_retried_unstreamed(http: httpx.AsyncClient) -> None:
    with (
        FaultServer([sse_reply(SSE_GOOD[:1]), json_reply(CALL_REPLY)]) as server,
        pytest.raises(ModelResponseError, match="ended before the reply was complete"),
    ):
        await _events(_client(http, server, timeout_s=10, silence=False))


async def test_model_stream_false_sends_every_request_unstreamed(http: httpx.AsyncClient) -> None:
    reply: JsonObject = {
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
    }
    with FaultServer([json_reply(reply)]) as server:
        client = OpenAIClient(http, base_url=server.base_url + "/v1", model="m", streaming=False)
        _, got = await _events(client)
    assert got.message.content == "hi" and not _streamed(server.requests[0].body)
