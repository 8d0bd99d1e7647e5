"""`AnthropicClient`: the Anthropic Messages API over an injected httpx client.

Every request carries explicit `cache_control` breakpoints (the system prompt, its stable
prefix when known, and the last messages; at most 4) with the configured TTL; the reply
reports where they went (`ModelReply.breakpoints`, `ModelReply.cache_ttl`) so traces and
the cache meter can simulate Anthropic's cache. Usage is already exclusive on this API.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

import httpx

from harness.models._http import Deadline, Endpoint
from harness.models._stream import SSEReplyStream, StaticEvents, sse_lines
from harness.models.anthropic._stream import AnthropicStreamAccumulator
from harness.models.anthropic._wire import CacheTTL, build_body, parse_message
from harness.models.base import ModelEvent
from harness.types import CacheBreakpoint, JsonObject, ModelReply, ModelRequest

__all__ = ["AnthropicClient"]


class AnthropicClient:
    """A `ModelClient` for `POST {base_url}/v1/messages`.

    Args:
        http: The httpx client to send with (its own timeouts are overridden per request).
        base_url: The API root (no `/v1`).
        model: The model id sent on the wire.
        api_key: Sent as `x-api-key`.
        cache_ttl: TTL of every cache marker: `"5m"` (`{"type": "ephemeral"}`) or `"1h"`.
        anthropic_version: The `anthropic-version` header.
        default_max_tokens: `max_tokens` when the request sets none (the API requires one).
        timeout_s: Time allowed for one whole call, streamed or not.
        extra_headers: Added to every request (e.g. `anthropic-beta`).
        api_key_env: The environment variable named when the API refuses the key.
        clock: Unix time, for `Retry-After` dates.
        streaming: False sends every request unstreamed (`model.stream: false`).
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        base_url: str = "https://api.anthropic.com",
        model: str,
        api_key: str,
        cache_ttl: CacheTTL = "5m",
        anthropic_version: str = "2023-06-01",
        default_max_tokens: int = 1024,
        timeout_s: float = 120.0,
        extra_headers: Mapping[str, str] | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        clock: Callable[[], float] = time.time,
        streaming: bool = True,
    ) -> None:
        headers = {**(extra_headers or {}), "x-api-key": api_key, "anthropic-version": anthropic_version}
        self._model = model
        self.provider_name = "anthropic"
        """What telemetry reports as `gen_ai.provider.name`."""
        self._ttl: CacheTTL = cache_ttl
        self._default_max_tokens = default_max_tokens
        self._timeout_s = timeout_s
        self._api_key_env = api_key_env
        self._streaming = streaming
        self._endpoint = Endpoint(
            http,
            base_url.rstrip("/") + "/v1/messages",
            headers=headers,
            provider="Anthropic",
            api_key_env=api_key_env,
            clock=clock,
        )

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def cache_ttl(self) -> CacheTTL:
        """The TTL every cache marker carries."""
        return self._ttl

    def _deadline(self) -> Deadline:
        return Deadline(self._timeout_s, what=self._endpoint.what)

    def _body(self, request: ModelRequest, *, stream: bool) -> tuple[JsonObject, tuple[CacheBreakpoint, ...]]:
        """The Messages body of `request` and where its cache markers went."""
        return build_body(
            request,
            model=self._model,
            cache_ttl=self._ttl,
            default_max_tokens=self._default_max_tokens,
            stream=stream,
        )

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send `request` without streaming and return the whole reply."""
        body, breakpoints = self._body(request, stream=False)
        data = await self._endpoint.post_json(body, self._deadline())
        reply = parse_message(data, what=self._endpoint.what, fallback_model=self._model)
        return dataclasses.replace(reply, breakpoints=breakpoints, cache_ttl=self._ttl)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        """Send `request` with `stream: true`; yields `ModelTextDelta`s then one `ReplyDone`."""
        if not self._streaming:
            reply = await self.complete(request)
            yield StaticEvents(reply, [reply.message.content])
            return
        body, breakpoints = self._body(request, stream=True)
        deadline = self._deadline()
        async with self._endpoint.open_stream(body, deadline) as response:
            accumulator = AnthropicStreamAccumulator(
                what=self._endpoint.what,
                fallback_model=self._model,
                api_key_env=self._api_key_env,
                breakpoints=breakpoints,
                cache_ttl=self._ttl,
            )
            yield SSEReplyStream(
                sse_lines(response.aiter_text(), what=self._endpoint.what), accumulator, deadline
            )
