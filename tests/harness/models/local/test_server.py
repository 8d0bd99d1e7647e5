"""The embedded model's HTTP app over a scripted engine, through keel's own OpenAI client:
native tool calls, streaming with tools, usage with cached tokens, clear 400s."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx
import pytest

from harness.errors import ModelRequestError
from harness.models.base import ModelTextDelta, PromptProgress, ReplyDone
from harness.models.factory import local_client
from harness.models.local._engine import PREFILL_CHUNK, Engine
from harness.models.local._server import ServerLimits, build_app, hold_back
from harness.types import Message, ModelRequest, ToolSpec
from tests.harness.models.local.test_engine import _engine
from tests.harness.models.recorder import stream_all

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
        texts, done = await stream_all(local_client(http, "http://local/v1", "fake", 30), _request())
    assert "".join(texts) == "Saving it.\n"
    assert "<tool" not in "".join(texts), "the call's markup is never streamed as text"
    assert [c.name for c in done.message.tool_calls] == ["memory"]
    assert json.loads(done.message.tool_calls[0].arguments) == {"content": "Sam O'Neill & co"}


async def test_a_plain_reply_without_tools_streams_as_text() -> None:
    http, _ = _client("Hello O'Neill & co.")
    async with http:
        client = local_client(http, "http://local/v1", "fake", 30)
        request = ModelRequest(system="", messages=(Message("user", "hi"),))
        texts, _ = await stream_all(client, request)
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


LONG = "x" * (2 * PREFILL_CHUNK + 20)


async def test_a_long_prefill_streams_its_progress_before_the_text() -> None:
    http, _ = _client("Hi.")
    async with http:
        client = local_client(http, "http://local/v1", "fake", 30)
        request = ModelRequest(system="", messages=(Message("user", LONG),))
        seen: list[object] = []
        async with client.stream(request) as events:
            seen = [ev async for ev in events]
    progress = [ev for ev in seen if isinstance(ev, PromptProgress)]
    total = progress[0].total
    assert [p.done for p in progress] == [0, PREFILL_CHUNK, 2 * PREFILL_CHUNK, total - 1]
    assert seen.index(progress[-1]) < min(i for i, ev in enumerate(seen) if isinstance(ev, ModelTextDelta))
    done = seen[-1]
    assert isinstance(done, ReplyDone) and done.reply.usage is not None and done.reply.usage.input == total


async def test_an_unstreamed_reply_is_kept_alive_with_leading_spaces() -> None:
    http, _ = _client("Hi.")
    async with http:
        body = {"messages": [{"role": "user", "content": LONG}]}
        r = await http.post("/v1/chat/completions", json=body)
        reply = await local_client(http, "http://local/v1", "fake", 30).complete(
            ModelRequest(system="", messages=(Message("user", LONG),))
        )
    assert r.status_code == 200 and r.text.startswith("    ")  # one space per progress report
    assert r.json()["choices"][0]["message"]["content"] == "Hi." and reply.message.content == "Hi."


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


async def test_a_request_without_the_bearer_token_is_refused() -> None:
    http, _ = _client("x")
    async with http:
        bare = await http.post("/v1/chat/completions", json={"messages": []}, headers={"Authorization": ""})
        wrong = await http.get("/v1/models", headers={"Authorization": "Bearer nope"})
        right = await http.get("/v1/models")
    assert bare.status_code == 401 and wrong.status_code == 401 and right.status_code == 200
    assert "bearer token" in bare.json()["error"]["message"]


def _limited(limits: ServerLimits, engine: Engine | None = None) -> httpx.AsyncClient:
    engine = engine or _engine("x", cap=1000, n_ctx=4000)[0]
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=build_app(engine, token=TOKEN, limits=limits)),
        base_url="http://local",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


async def test_a_body_over_the_cap_is_refused_before_it_is_read() -> None:
    read: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            read.append(1)
            yield b" " * 1000

    async with _limited(ServerLimits(max_body=10_000)) as http:
        declared = await http.post("/v1/chat/completions", content=b" " * 20_000)
        streamed = await http.post("/v1/chat/completions", content=chunks())
    assert declared.status_code == 413 and "10,000 bytes" in declared.json()["error"]["message"]
    assert streamed.status_code == 413
    assert len(read) <= 12, "reading stopped at the cap, not at the end of the body"


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000, b'{"messages": ' + b"[" * 100 + b"]" * 100 + b"}", b"\xff\xfe", b'{"a": NaN'],
)
async def test_deep_or_invalid_json_is_a_clean_400(body: bytes) -> None:
    async with _limited(ServerLimits()) as http:
        r = await http.post("/v1/chat/completions", content=body)
    assert r.status_code == 400
    assert "Traceback" not in r.text and r.json()["error"]["type"] == "invalid_request_error"


async def test_a_full_queue_answers_503_and_frees_up_when_work_ends() -> None:
    gate = threading.Event()
    engine, script, _ = _engine("ok", cap=1000, n_ctx=4000)

    def held(*args: object) -> Iterator[int]:
        gate.wait(10)  # the scripted sampler, held until the gate opens
        return script(*args)  # type: ignore[arg-type]  # the sampler's own arguments

    engine.sample = held  # a test double at the engine's sampler seam
    body = {"messages": [{"role": "user", "content": "hi"}]}
    first: list[httpx.Response] = []
    async with _limited(ServerLimits(max_queue=1), engine) as http:

        async def slow() -> None:
            first.append(await http.post("/v1/chat/completions", json=body))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.3)
            busy = await http.post("/v1/chat/completions", json=body)
            gate.set()
        after = await http.post("/v1/chat/completions", json=body)
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
    assert first[0].status_code == 200 and after.status_code == 200
