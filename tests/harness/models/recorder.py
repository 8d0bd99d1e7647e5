"""`Recorder`: the MockTransport handler the model-client tests answer requests with."""

from __future__ import annotations

import json

import httpx

from harness.types import JsonObject

__all__ = ["Recorder"]


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
