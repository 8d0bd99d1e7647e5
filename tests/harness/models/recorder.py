"""`Recorder`: the MockTransport handler the model-client tests answer requests with, and
`stream_all`, which reads one streamed reply to its end."""

from __future__ import annotations

import json

import httpx

from harness.models import ModelClient, ModelTextDelta, ReplyDone
from harness.types import JsonObject, ModelReply, ModelRequest

__all__ = ["Recorder", "stream_all"]


class Recorder:
    """A MockTransport handler that answers from a list and keeps every request."""

    def __init__(self, *responses: httpx.Response) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.responses.pop(0)

    def body(self, n: int = 0) -> JsonObject:
        """The JSON body of the `n`th request."""
        result = json.loads(self.requests[n].content)
        assert isinstance(result, dict)
        return result


async def stream_all(client: ModelClient, request: ModelRequest) -> tuple[list[str], ModelReply]:
    """The text deltas and the final reply of one streamed request."""
    texts: list[str] = []
    async with client.stream(request) as events:
        async for event in events:
            if isinstance(event, ModelTextDelta):
                texts.append(event.text)
            elif isinstance(event, ReplyDone):
                return texts, event.reply
    raise AssertionError("no ReplyDone")
