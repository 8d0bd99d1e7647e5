"""Model replies are read in chunks under a cap, never whole: a huge body is a clear
`ModelResponseError` (not a `MemoryError`), read no further than the cap."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from harness.errors import ModelRequestError, ModelResponseError
from harness.models import AnthropicClient, OpenAIClient
from harness.models._http import MAX_BODY_BYTES, MAX_ERROR_BODY_BYTES
from harness.types import Message, ModelRequest

CHUNK = 1 << 20


class Endless(httpx.AsyncByteStream):
    """A body of `total` bytes sent in 1 MiB chunks, counting how much was actually read."""

    def __init__(self, total: int, head: bytes = b'{"x": "') -> None:
        self.total = total
        self.head = head
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        while self.sent < self.total:
            self.sent += CHUNK
            yield b"a" * CHUNK


async def streamed(client: OpenAIClient) -> None:
    async with client.stream(request()) as events:
        async for _ in events:
            pass


def request() -> ModelRequest:
    return ModelRequest(system="s", messages=(Message(role="user", content="hi"),), max_tokens=10)


def transport(
    body: Endless, *, status: int = 200, content_type: str = "application/json"
) -> httpx.MockTransport:
    def handler(_: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, stream=body)

    return httpx.MockTransport(handler)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_huge_reply_is_a_clear_error_read_no_further_than_the_cap(provider: str) -> None:
    body = Endless(10 * MAX_BODY_BYTES)
    http = httpx.AsyncClient(transport=transport(body))
    client: OpenAIClient | AnthropicClient
    if provider == "openai":
        client = OpenAIClient(http, base_url="http://llm.test/v1", model="m")
    else:
        client = AnthropicClient(http, base_url="http://llm.test", model="m", api_key="k")
    with pytest.raises(ModelResponseError, match="larger than"):
        await client.complete(request())
    assert body.sent <= MAX_BODY_BYTES + CHUNK


async def test_a_json_answer_to_a_streamed_request_is_capped_too() -> None:
    body = Endless(10 * MAX_BODY_BYTES)
    http = httpx.AsyncClient(transport=transport(body))
    client = OpenAIClient(http, base_url="http://llm.test/v1", model="m")
    with pytest.raises(ModelResponseError, match="larger than"):
        await streamed(client)
    assert body.sent <= MAX_BODY_BYTES + CHUNK


@pytest.mark.parametrize("stream", [False, True])
async def test_a_huge_error_body_is_cut_and_the_status_still_decides_the_error(stream: bool) -> None:
    body = Endless(10 * MAX_BODY_BYTES, head=b"bad request: ")
    http = httpx.AsyncClient(transport=transport(body, status=400, content_type="text/plain"))
    client = OpenAIClient(http, base_url="http://llm.test/v1", model="m")
    with pytest.raises(ModelRequestError, match="HTTP 400"):
        await (streamed(client) if stream else client.complete(request()))
    assert body.sent <= MAX_ERROR_BODY_BYTES + CHUNK
