"""The embedded model's HTTP app over a scripted engine, through keel's own OpenAI client:
native tool calls, streaming with tools, usage with cached tokens, clear 400s."""

from __future__ import annotations

import json

import httpx
import pytest

from harness.errors import ModelRequestError
from harness.models.base import ModelTextDelta, ReplyDone
from harness.models.factory import local_client
from harness.models.local._server import build_app, hold_back
from harness.types import Message, ModelRequest, ToolSpec
from tests.harness.models.local.test_engine import _engine

TOKEN = "test-token"
MEMORY = ToolSpec("memory", "Save a fact.", {"type": "object", "properties": {"content": {"type": "string"}}})
CALL = (
    'Saving it.\n<tool_call>\n{"name": "memory", "arguments": {"content": "Sam O\'Neill & co"}}\n</tool_call>'
)


def _client(text: str) -> tuple[httpx.AsyncClient, object]:
    engine, script, _ = _engine(text, cap=1000, n_ctx=4000)
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=build_app(engine, token=TOKEN)),
        base_url="http://local",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    return http, script


def _request(**kw: object) -> ModelRequest:
    return ModelRequest(
        system="You keep notes.",
        messages=(Message("user", "I'm Sam O'Neill & co."),),
        tools=(MEMORY,),
        **kw,  # type: ignore[arg-type]  # the tests pass ModelRequest fields
    )


async def test_a_native_tool_call_reaches_the_client_unescaped_with_usage() -> None:
    http, _ = _client(CALL)
    async with http:
        reply = await local_client(http, "http://local/v1", "fake", 30).complete(_request())
    assert reply.message.content == "Saving it."
    (call,) = reply.message.tool_calls
    assert call.name == "memory"
    assert json.loads(call.arguments) == {"content": "Sam O'Neill & co"}
    assert reply.finish_reason == "tool_calls"
    assert reply.usage is not None and reply.usage.input > 0 and reply.usage.output == len(CALL)


async def test_streaming_with_tools_sends_the_prose_then_the_call() -> None:
    http, _ = _client(CALL)
    async with http:
        client = local_client(http, "http://local/v1", "fake", 30)
        texts: list[str] = []
        done = None
        async with client.stream(_request()) as events:
            async for ev in events:
                if isinstance(ev, ModelTextDelta):
                    texts.append(ev.text)
                elif isinstance(ev, ReplyDone):
                    done = ev.reply
    assert done is not None
    assert "".join(texts) == "Saving it.\n"
    assert "<tool" not in "".join(texts), "the call's markup is never streamed as text"
    assert [c.name for c in done.message.tool_calls] == ["memory"]
    assert json.loads(done.message.tool_calls[0].arguments) == {"content": "Sam O'Neill & co"}


async def test_a_plain_reply_without_tools_streams_as_text() -> None:
    http, _ = _client("Hello O'Neill & co.")
    async with http:
        client = local_client(http, "http://local/v1", "fake", 30)
        request = ModelRequest(system="", messages=(Message("user", "hi"),))
        texts: list[str] = []
        async with client.stream(request) as events:
            async for ev in events:
                if isinstance(ev, ModelTextDelta):
                    texts.append(ev.text)
    assert len(texts) > 1, "streamed in pieces, not as one block at the end"
    assert "".join(texts) == "Hello O'Neill & co."


async def test_a_second_request_sharing_the_prefix_reports_cached_tokens() -> None:
    http, _ = _client("Hello Sam.")
    async with http:
        client = local_client(http, "http://local/v1", "fake", 30)
        first = await client.complete(_request())
        second = await client.complete(
            ModelRequest(
                system="You keep notes.",
                messages=(
                    Message("user", "I'm Sam O'Neill & co."),
                    first.message,
                    Message("user", "And I use vim."),
                ),
                tools=(MEMORY,),
            )
        )
    assert first.usage is not None and first.usage.cache_read == 0
    # The fake template renders one character per token and puts tools after the messages:
    # the shared prefix is the system and first user turns.
    shared = len("<|system|>You keep notes.\n<|user|>I'm Sam O'Neill & co.\n")
    assert second.usage is not None and second.usage.cache_read == shared


async def test_a_bad_request_is_a_400_the_client_reports_clearly() -> None:
    http, _ = _client("x")
    async with http:
        client = local_client(http, "http://local/v1", "fake", 30)
        with pytest.raises(ModelRequestError, match="names no tool"):
            await client.complete(_request(tool_choice="search"))
        r = await http.post("/v1/chat/completions", content=b"{not json")
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("text", "ready"),
    [
        ("Hello there", 11),
        ("Hello <tool", 6),
        ("Hello <tool_call>\n{", 6),
        ('{"name": "memory"', 0),
        ("  ``", 0),
        ("Plain < text", 12),
    ],
)
def test_hold_back_streams_only_what_cannot_become_a_tool_call(text: str, ready: int) -> None:
    assert hold_back(text) == ready
