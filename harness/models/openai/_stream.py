"""Assembles a streamed chat-completions reply from its `chat.completion.chunk` events.

Text deltas are concatenated; tool-call deltas are merged by their `index`: the first
chunk of a call carries its id and name, later ones append to `function.arguments`.
llama-cpp-python repeats the id and the name on every chunk, so a name is taken once and
never concatenated. The reply is complete after `[DONE]` or a `finish_reason`; the usage
chunk (`stream_options.include_usage`) arrives between the two. A stream in which no chunk
carried a choice is an error, not an empty answer, and a reply is cut at `MAX_REPLY_CHARS`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import JsonValue

from harness.errors import ModelResponseError, ModelServerError
from harness.models._http import provider_message, snippet
from harness.models._stream import ReplyBudget, SSEEvent
from harness.types import JsonObject, Message, ModelReply, ToolCall
from harness.usage import normalize_openai_usage

__all__ = ["OpenAIStreamAccumulator"]


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIStreamAccumulator:
    """The `StreamAccumulator` for OpenAI-compatible SSE streams.

    Args:
        what: Names the call in error messages.
        fallback_model: The model name to report when the chunks carry none.
    """

    def __init__(self, *, what: str, fallback_model: str) -> None:
        self._what = what
        self._model = fallback_model
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish: str | None = None
        self._done = False
        self._usage: JsonObject | None = None
        self._timings: JsonObject | None = None
        self._chunks = 0
        self._choices_seen = 0
        self._budget = ReplyBudget()

    @property
    def finished(self) -> bool:
        return self._done

    @property
    def complete(self) -> bool:
        return self._done or self._finish is not None

    def progress(self) -> str:
        chars = sum(len(t) for t in self._text)
        return (
            f"{self._chunks} chunks, {chars} characters of text and {len(self._calls)} tool calls so far, "
            "no finish_reason and no [DONE]"
        )

    def feed(self, event: SSEEvent) -> list[str]:
        data = event.data.strip()
        if data == "[DONE]":
            self._done = True
            return []
        self._chunks += 1
        try:
            chunk: JsonValue = json.loads(data)
        except ValueError as exc:
            raise ModelResponseError(
                f"{self._what}: stream chunk #{self._chunks} is not valid JSON: {snippet(data)!r}"
            ) from exc
        if not isinstance(chunk, dict):
            raise ModelResponseError(f"{self._what}: stream chunk #{self._chunks} is not an object: {data!r}")
        if "error" in chunk and not chunk.get("choices"):
            # Routers (OpenRouter, LiteLLM) report a failure mid-stream as an error chunk.
            raise ModelServerError(f"{self._what}: the stream reported an error: {provider_message(data)}")
        model = chunk.get("model")
        if isinstance(model, str) and model:
            self._model = model
        usage, timings = chunk.get("usage"), chunk.get("timings")
        if isinstance(usage, dict):
            self._usage = usage
        if isinstance(timings, dict):
            self._timings = timings
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return []
        texts: list[str] = []
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            self._choices_seen += 1
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if isinstance(content, str) and content:
                    content = self._budget.take(content)
                    self._text.append(content)
                    texts.append(content)
                raw_calls = delta.get("tool_calls")
                if isinstance(raw_calls, list):
                    for raw in raw_calls:
                        self._merge_call(raw)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self._finish = finish
            if self._budget.exhausted:
                # Cut at MAX_REPLY_CHARS: stop reading, finish as if max_tokens was hit.
                self._finish, self._done = "length", True
                break
        return texts

    def _merge_call(self, raw: JsonValue) -> None:
        if not isinstance(raw, dict):
            raise ModelResponseError(f"{self._what}: a tool-call delta is not an object: {raw!r}")
        index = raw.get("index")
        call_id = raw.get("id")
        if not isinstance(index, int):
            # No index (a few servers): a new id starts a new call, anything else continues the last.
            known = {c.id for c in self._calls.values()}
            fresh = isinstance(call_id, str) and call_id and call_id not in known
            index = len(self._calls) if fresh or not self._calls else max(self._calls)
        call = self._calls.setdefault(index, _PartialCall())
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        function = raw.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name and not call.name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments.append(self._budget.take(arguments))
            elif arguments is not None:
                call.arguments.append(self._budget.take(json.dumps(arguments, ensure_ascii=False)))

    def reply(self) -> ModelReply:
        if self._choices_seen == 0:
            # A stream of chunks with empty `choices` (only usage, or nothing) carries no answer
            # at all; accepting it would record an empty assistant turn as if the model said "".
            raise ModelResponseError(
                f"{self._what}: the stream ended without any choice ({self._chunks} chunks, every "
                "`choices` list empty); the server sent no answer. Retry, or check the endpoint"
            )
        calls: list[ToolCall] = []
        for position, index in enumerate(sorted(self._calls)):
            partial = self._calls[index]
            if not partial.name:
                raise ModelResponseError(f"{self._what}: streamed tool call #{position} never got a name")
            calls.append(
                ToolCall(
                    id=partial.id or f"call_{index}", name=partial.name, arguments="".join(partial.arguments)
                )
            )
        return ModelReply(
            message=Message(role="assistant", content="".join(self._text), tool_calls=tuple(calls)),
            usage=normalize_openai_usage(self._usage, timings=self._timings),
            finish_reason=self._finish,
            model=self._model,
        )
