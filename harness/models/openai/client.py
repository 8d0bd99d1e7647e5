"""`OpenAIClient`: any OpenAI-compatible chat-completions endpoint over an injected httpx client.

Works with OpenAI, vLLM, SGLang, llama.cpp's server, llama-cpp-python's server, Ollama,
DeepSeek and OpenRouter: the request is the common subset (messages, tools, tool_choice,
max_tokens, temperature, stream), and usage is normalized from each of their shapes
(`harness.usage`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

import httpx

from harness.errors import ModelError, ModelRequestError, ModelResponseError, ModelServerError
from harness.models._http import MAX_BODY_BYTES, Deadline, Endpoint, parse_json_object, read_capped
from harness.models._stream import SSEReplyStream, StaticEvents, sse_lines
from harness.models.base import ModelEvent, ModelTextDelta
from harness.models.openai._stream import OpenAIStreamAccumulator
from harness.models.openai._wire import ToolResultStyle, build_body, parse_completion
from harness.types import JsonObject, ModelReply, ModelRequest

__all__ = ["OpenAIClient"]


class OpenAIClient:
    """A `ModelClient` for `POST {base_url}/chat/completions`.

    Args:
        http: The httpx client to send with (its own timeouts are overridden per request).
        base_url: The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
        model: The model id sent on the wire.
        api_key: Sent as `Authorization: Bearer …` when set (local servers need none).
        timeout_s: Time allowed for one whole call, streamed or not.
        extra_headers: Added to every request (e.g. OpenRouter's `HTTP-Referer`).
        api_key_env: The environment variable named when the endpoint refuses the key.
        clock: Unix time, for `Retry-After` dates.
        stream_with_tools: When False, `stream` sends requests that offer tools unstreamed
            and yields the whole text as one delta. llama-cpp-python's server needs this: it
            fails mid-stream ("Automatic streaming tool choice is not supported") whenever
            the model picks a tool under `tool_choice: auto`.
        tool_results: `native` sends tool results as `role: tool` messages; `as_user` sends
            them as user messages naming the call. llama-cpp-python's chatml-function-calling
            template drops `tool` messages entirely, so the local model needs `as_user` to
            see its results at all.
        provider_name: what telemetry reports as `gen_ai.provider.name` (the API's flavour,
            `openai`, unless the caller knows the server: `llama.cpp` for keel's own).
        silence_timeout: `timeout_s` measures silence, not the whole call (keel's embedded
            server, which reports prefill progress and never falls silent while it works).
        streaming: False sends every request unstreamed (`model.stream: false`).
        split_system: send a system prompt whose `stable_prefix_chars` ends early as two
            system messages (keel's local layout: memory after the tools).

    A server that refuses a streamed request with tools (an error that names streaming, or a
    stream that breaks off before any text) is asked again without streaming, and requests
    with tools are sent unstreamed from then on (llama-cpp-python's own server does this
    whenever its model picks a tool under `tool_choice: auto`).
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        extra_headers: Mapping[str, str] | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        clock: Callable[[], float] = time.time,
        stream_with_tools: bool = True,
        tool_results: ToolResultStyle = "native",
        provider_name: str = "openai",
        silence_timeout: bool = False,
        streaming: bool = True,
        split_system: bool = False,
    ) -> None:
        headers = dict(extra_headers or {})
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._model = model
        self.provider_name = provider_name
        self._timeout_s = timeout_s
        self._stream_with_tools = stream_with_tools
        self._silence = silence_timeout
        self._streaming = streaming
        self._split = split_system
        self._tool_results: ToolResultStyle = tool_results
        self._endpoint = Endpoint(
            http,
            base_url.rstrip("/") + "/chat/completions",
            headers=headers,
            provider="OpenAI-compatible",
            api_key_env=api_key_env,
            clock=clock,
        )

    @property
    def model_name(self) -> str:
        return self._model

    def _body(self, request: ModelRequest, *, stream: bool) -> JsonObject:
        split = self._split
        return build_body(
            request, model=self._model, stream=stream, tool_results=self._tool_results, split_system=split
        )

    def _deadline(self) -> Deadline:
        return Deadline(self._timeout_s, what=self._endpoint.what, silence=self._silence)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send `request` without streaming and return the whole reply."""
        data = await self._endpoint.post_json(self._body(request, stream=False), self._deadline())
        return parse_completion(data, what=self._endpoint.what, fallback_model=self._model)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        """Send `request` with `stream: true`; yields `ModelTextDelta`s then one `ReplyDone`."""
        if not self._streaming or (request.tools and not self._stream_with_tools):
            reply = await self.complete(request)
            yield StaticEvents(reply, [reply.message.content])
            return
        body = self._body(request, stream=True)
        deadline = self._deadline()
        opened = False
        try:
            async with self._endpoint.open_stream(body, deadline) as response:
                opened = True
                yield await self._events(request, response, deadline)
                return
        except ModelError as exc:
            if opened or not self.refuses_streaming(request, exc):
                raise
        reply = await self.complete_instead(request)
        yield StaticEvents(reply, [reply.message.content])

    async def _events(
        self, request: ModelRequest, response: httpx.Response, deadline: Deadline
    ) -> AsyncIterator[ModelEvent]:
        if response.headers.get("content-type", "").startswith("application/json"):
            # The server ignored `stream` and answered in one JSON body.
            text = await read_capped(
                response, limit=MAX_BODY_BYTES, what=self._endpoint.what, deadline=deadline
            )
            data = parse_json_object(text, what=self._endpoint.what)
            reply = parse_completion(data, what=self._endpoint.what, fallback_model=self._model)
            return StaticEvents(reply, [reply.message.content])
        accumulator = OpenAIStreamAccumulator(what=self._endpoint.what, fallback_model=self._model)
        lines = sse_lines(response.aiter_text(), what=self._endpoint.what)
        return _FallBack(self, request, SSEReplyStream(lines, accumulator, deadline))

    def refuses_streaming(self, request: ModelRequest, error: ModelError) -> bool:
        """Whether `error`, met before any text of a streamed request with tools, means the server
        will not stream tool calls (so the request should be sent again unstreamed)."""
        if not request.tools:
            return False
        if isinstance(error, ModelResponseError):
            return True  # the stream broke off or was unreadable before any text
        refusal = isinstance(error, ModelRequestError | ModelServerError)
        return refusal and "stream" in str(error).lower()

    async def complete_instead(self, request: ModelRequest) -> ModelReply:
        """The reply to a request whose stream the server refused; tools go unstreamed from now on."""
        self._stream_with_tools = False
        return await self.complete(request)


class _FallBack:
    """A streamed reply that, refused by the server before any text, is fetched unstreamed."""

    def __init__(
        self, client: OpenAIClient, request: ModelRequest, events: AsyncIterator[ModelEvent]
    ) -> None:
        self._client = client
        self._request = request
        self._events = events
        self._texted = False

    def __aiter__(self) -> _FallBack:
        return self

    async def __anext__(self) -> ModelEvent:
        try:
            event = await self._events.__anext__()
        except ModelError as exc:
            if self._texted or not self._client.refuses_streaming(self._request, exc):
                raise
            reply = await self._client.complete_instead(self._request)
            self._events = StaticEvents(reply, [reply.message.content])
            self._texted = True
            return await self._events.__anext__()
        if isinstance(event, ModelTextDelta):
            self._texted = True
        return event
