"""Assembles a streamed Messages-API reply from its server-sent events.

Event order: `message_start` (model, initial usage), then per content block
`content_block_start` / `content_block_delta`* / `content_block_stop` (`text_delta` text,
`input_json_delta` fragments of a tool call's input), `message_delta` (stop reason, final
usage), `message_stop`. `ping` is noise; `error` (e.g. `overloaded_error`) ends the stream
and is raised as the error its type maps to.
"""

from __future__ import annotations

import json
from dataclasses import KW_ONLY, dataclass, field
from typing import NoReturn

import httpx
from pydantic import JsonValue

from harness.errors import ModelResponseError
from harness.models._http import error_for_status, snippet
from harness.models._stream import ReplyBudget, SSEEvent
from harness.models.anthropic._wire import CacheTTL
from harness.types import CacheBreakpoint, JsonObject, Message, ModelReply, ToolCall
from harness.usage import normalize_anthropic_usage

__all__ = ["ERROR_STATUS", "AnthropicStreamAccumulator"]

ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""Anthropic error types and the HTTP status each stands for."""


@dataclass(slots=True)
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    start_input: JsonValue = None


@dataclass(eq=False)
class AnthropicStreamAccumulator:
    """The `StreamAccumulator` for Anthropic Messages streams."""

    _: KW_ONLY
    what: str
    """Names the call in error messages."""
    fallback_model: str
    """The model name to report when `message_start` carries none."""
    api_key_env: str
    """Named if the stream reports an authentication error."""
    breakpoints: tuple[CacheBreakpoint, ...]
    """Where the request's cache markers went (copied onto the reply)."""
    cache_ttl: CacheTTL
    """The markers' TTL (copied onto the reply)."""
    _model: str = field(init=False)
    _blocks: dict[int, _Block] = field(default_factory=dict, init=False)
    _usage: JsonObject = field(default_factory=dict, init=False)
    _stop: str | None = field(default=None, init=False)
    _started: bool = field(default=False, init=False)
    _stopped: bool = field(default=False, init=False)
    _events: int = field(default=0, init=False)
    _budget: ReplyBudget = field(default_factory=ReplyBudget, init=False)

    def __post_init__(self) -> None:
        self._model = self.fallback_model

    @property
    def finished(self) -> bool:
        return self._stopped

    @property
    def complete(self) -> bool:
        return self._stopped

    def progress(self) -> str:
        started = "message_start seen" if self._started else "no message_start"
        return f"{self._events} events, {started}, {len(self._blocks)} content blocks, no message_stop"

    def feed(self, event: SSEEvent) -> list[str]:
        self._events += 1
        try:
            data: JsonValue = json.loads(event.data)
        except ValueError as exc:
            raise ModelResponseError(
                f"{self.what}: stream event #{self._events} ({event.event!r}) is not valid JSON: "
                f"{snippet(event.data)!r}"
            ) from exc
        if not isinstance(data, dict):
            raise ModelResponseError(f"{self.what}: stream event #{self._events} is not an object")
        kind = data.get("type")
        kind = kind if isinstance(kind, str) else event.event
        if kind == "message_start":
            self._on_start(data.get("message"))
        elif kind == "content_block_start":
            self._on_block_start(data)
        elif kind == "content_block_delta":
            return self._on_delta(data)
        elif kind == "message_delta":
            self._on_message_delta(data)
        elif kind == "message_stop":
            self._stopped = True
        elif kind == "error":
            self._raise_error(data, event.data)
        # ping, content_block_stop and event types added later carry nothing we need
        return []

    def _on_start(self, message: JsonValue) -> None:
        self._started = True
        if not isinstance(message, dict):
            return
        model, usage = message.get("model"), message.get("usage")
        if isinstance(model, str) and model:
            self._model = model
        if isinstance(usage, dict):
            self._usage = dict(usage)

    def _index(self, data: JsonObject) -> int:
        index = data.get("index")
        if not isinstance(index, int):
            raise ModelResponseError(f"{self.what}: stream event #{self._events} has no block index")
        return index

    def _on_block_start(self, data: JsonObject) -> None:
        block = data.get("content_block")
        if not isinstance(block, dict):
            raise ModelResponseError(f"{self.what}: content_block_start without a content_block")
        kind = block.get("type")
        new = _Block(kind=kind if isinstance(kind, str) else "unknown")
        if new.kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                new.text.append(text)
        elif new.kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise ModelResponseError(f"{self.what}: a streamed tool_use block lacks an id or a name")
            new.call_id, new.name, new.start_input = call_id, name, block.get("input")
        self._blocks[self._index(data)] = new

    def _on_delta(self, data: JsonObject) -> list[str]:
        index = self._index(data)
        block = self._blocks.get(index)
        delta = data.get("delta")
        if block is None or not isinstance(delta, dict):
            raise ModelResponseError(f"{self.what}: content_block_delta for unknown block {index}")
        kind = delta.get("type")
        out: list[str] = []
        if kind == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text:
                text = self._budget.take(text)
                block.text.append(text)
                out.append(text)
        elif kind == "input_json_delta":
            fragment = delta.get("partial_json")
            if isinstance(fragment, str):
                block.text.append(self._budget.take(fragment))
        if self._budget.exhausted:
            # Cut at MAX_REPLY_CHARS: stop reading, finish as if max_tokens was hit.
            self._stop, self._stopped = "max_tokens", True
        return out

    def _on_message_delta(self, data: JsonObject) -> None:
        delta, usage = data.get("delta"), data.get("usage")
        if isinstance(delta, dict):
            stop = delta.get("stop_reason")
            if isinstance(stop, str):
                self._stop = stop
        if isinstance(usage, dict):
            # Final counts: output_tokens (and, on newer API versions, the input fields).
            self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _raise_error(self, data: JsonObject, raw: str) -> NoReturn:
        error = data.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        status = ERROR_STATUS.get(kind, 500) if isinstance(kind, str) else 500
        raise error_for_status(
            status,
            body=raw,
            headers=httpx.Headers(),
            what=f"{self.what} (mid-stream)",
            api_key_env=self.api_key_env,
            now=0.0,
        )

    def reply(self) -> ModelReply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.kind == "text":
                texts.append("".join(block.text))
            elif block.kind == "tool_use":
                arguments = "".join(block.text)
                if not arguments:
                    start = block.start_input
                    arguments = json.dumps(start, ensure_ascii=False) if isinstance(start, dict) else "{}"
                calls.append(ToolCall(id=block.call_id, name=block.name, arguments=arguments))
        return ModelReply(
            message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls)),
            usage=normalize_anthropic_usage(self._usage) if self._usage else None,
            finish_reason=self._stop,
            model=self._model,
            breakpoints=self.breakpoints,
            cache_ttl=self.cache_ttl,
        )
