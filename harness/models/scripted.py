"""`ScriptedModel`: a deterministic `ModelClient` that plays back a script.

A script is a sequence of steps, one per model call:

- `ReplyStep` — a reply with text and/or tool calls (and optionally its usage);
- `RaiseStep` — raise this exception instead (e.g. a `ModelServerError` to test retries);
- `DynamicStep` — call a function with the request and reply with what it returns.

Helpers keep scripts short: `say("hi")`, `call_tool("memory", {"action": "add", ...})`,
`calls(tool_call("a", {...}), tool_call("b", {...}), text="...")`, `fail(error)`,
`respond(fn)`. Scenario files give the same steps as plain data (`steps_from_data`).

The model records every request (`requests`; `record=False` keeps none), never sleeps, and
reports a usage estimated with `CharTokenizer` when a step gives none, so traces built on it
have numbers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal, TypeAlias

from harness.errors import ScriptExhaustedError
from harness.models._stream import StaticEvents, split_text
from harness.models.base import ModelEvent
from harness.tokens import CharTokenizer, TokenCounter, Tokenizer
from harness.types import JsonObject, Message, ModelReply, ModelRequest, ToolCall, Usage

__all__ = [
    "DynamicStep",
    "RaiseStep",
    "ReplyLike",
    "ReplyStep",
    "ScriptStep",
    "ScriptedModel",
    "StepLike",
    "call_tool",
    "calls",
    "fail",
    "respond",
    "say",
    "tool_call",
]


@dataclass(frozen=True, slots=True)
class ReplyStep:
    """Reply with `text` and/or `tool_calls`.

    A tool call whose `id` is empty gets `call_<n>` (n counts the model's tool calls from 1),
    so ids are unique and the same on every run.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    """Reported as is; None → estimated from the request and the reply."""
    finish_reason: str | None = None
    """None → `"tool_calls"` when the reply calls tools, else `"stop"`."""
    kind: Literal["reply"] = "reply"


@dataclass(frozen=True, slots=True)
class RaiseStep:
    """Raise `error` instead of replying."""

    error: Exception
    kind: Literal["raise"] = "raise"


ReplyLike: TypeAlias = ModelReply | ReplyStep | str
"""What a `DynamicStep` function may return: a full reply, a step, or just text."""


@dataclass(frozen=True, slots=True)
class DynamicStep:
    """Reply with whatever `respond(request)` returns (it may also raise)."""

    respond: Callable[[ModelRequest], ReplyLike]
    kind: Literal["dynamic"] = "dynamic"


ScriptStep: TypeAlias = ReplyStep | RaiseStep | DynamicStep
StepLike: TypeAlias = ScriptStep | str | Exception | Callable[[ModelRequest], ReplyLike]
"""Accepted in a script: a step, or shorthand — text, an exception, a function."""


def say(text: str, *, usage: Usage | None = None) -> ReplyStep:
    """A plain text reply."""
    return ReplyStep(text=text, usage=usage)


def tool_call(name: str, arguments: JsonObject | str | None = None, *, id: str = "") -> ToolCall:
    """One tool call; dict arguments are JSON-encoded, a string is used verbatim (bad JSON too)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
    return ToolCall(id=id, name=name, arguments=raw)


def calls(*tool_calls: ToolCall, text: str = "", usage: Usage | None = None) -> ReplyStep:
    """A reply that calls several tools at once (optionally with some text)."""
    return ReplyStep(text=text, tool_calls=tuple(tool_calls), usage=usage)


def call_tool(
    name: str,
    arguments: JsonObject | str | None = None,
    *,
    id: str | None = None,
    text: str = "",
    usage: Usage | None = None,
) -> ReplyStep:
    """A reply that calls one tool."""
    return calls(tool_call(name, arguments, id=id or ""), text=text, usage=usage)


def fail(error: Exception) -> RaiseStep:
    """A step that raises `error`."""
    return RaiseStep(error=error)


def respond(function: Callable[[ModelRequest], ReplyLike]) -> DynamicStep:
    """A step that computes its reply from the request."""
    return DynamicStep(respond=function)


def _as_step(item: StepLike) -> ScriptStep:
    if isinstance(item, ReplyStep | RaiseStep | DynamicStep):
        return item
    if isinstance(item, str):
        return say(item)
    if isinstance(item, Exception):
        return RaiseStep(error=item)
    if callable(item):
        return DynamicStep(respond=item)
    raise TypeError(f"a script step must be a step, text, an exception or a function, not {item!r}")


class ScriptedModel:
    """A `ModelClient` that replies from a script.

    Args:
        script: The steps, one per call (shorthand allowed, see `StepLike`).
        model_name: Reported as the model (default `"scripted"`).
        tokenizer: Used to estimate usage when a step gives none (default `CharTokenizer`).
        stream_chunks: How many text deltas `stream` splits a reply into (at most).
        record: Keep every request and reply in `requests` and `replies` (what tests read).
            False keeps nothing, as a real client does: a benchmark running thousands of
            turns would otherwise hold every prompt it sent alive (and the collector would
            scan them all).
    """

    def __init__(
        self,
        script: Iterable[StepLike] = (),
        *,
        model_name: str = "scripted",
        tokenizer: Tokenizer | None = None,
        stream_chunks: int = 3,
        record: bool = True,
    ) -> None:
        self._steps: list[ScriptStep] = [_as_step(s) for s in script]
        self._next = 0
        self._calls = 0
        self._name = model_name
        self._counter = TokenCounter(tokenizer or CharTokenizer())
        self._chunks = stream_chunks
        self._record = record
        self._received = 0
        self.requests: list[ModelRequest] = []
        """Every request received, in order (including one that found the script exhausted)."""
        self.replies: list[ModelReply] = []
        """Every reply given, in order."""

    @property
    def model_name(self) -> str:
        return self._name

    provider_name = "keel.scripted"
    """What telemetry reports as `gen_ai.provider.name`."""

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self._steps) - self._next

    def extend(self, steps: Iterable[StepLike]) -> None:
        """Append steps to the script (e.g. the next turn's replies)."""
        self._steps.extend(_as_step(s) for s in steps)

    def assert_complete(self) -> None:
        """Raise AssertionError if some steps were never played."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel played {self._next} of {len(self._steps)} steps; "
                f"{self.remaining} never ran (next: {self._steps[self._next]!r})"
            )

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Record `request` and play the next step."""
        return self._play(request)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        """Record `request`, play the next step, and stream it in `stream_chunks` pieces.

        A failing step (or an exhausted script) raises from the first `__anext__`, as a
        real client's failure surfaces while the stream is read.
        """
        try:
            reply = self._play(request)
        except Exception as exc:
            events = StaticEvents(None, error=exc)
        else:
            events = StaticEvents(reply, split_text(reply.message.content, self._chunks))
        yield events

    def _play(self, request: ModelRequest) -> ModelReply:
        self._received += 1
        if self._record:
            self.requests.append(request)
        if self._next >= len(self._steps):
            raise ScriptExhaustedError(
                f"ScriptedModel has no reply left: its script had {len(self._steps)} "
                f"step{'s' if len(self._steps) != 1 else ''} and this is request #{self._received}; "
                "add a step for it"
            )
        step = self._steps[self._next]
        self._next += 1
        if isinstance(step, RaiseStep):
            raise step.error
        if isinstance(step, DynamicStep):
            produced = step.respond(request)
            reply = (
                produced if isinstance(produced, ModelReply) else self._render(request, _as_step(produced))
            )
        else:
            reply = self._render(request, step)
        if self._record:
            self.replies.append(reply)
        return reply

    def _render(self, request: ModelRequest, step: ScriptStep) -> ModelReply:
        if not isinstance(step, ReplyStep):
            raise TypeError(f"a DynamicStep function must return a reply, a ReplyStep or text, not {step!r}")
        tool_calls: list[ToolCall] = []
        for call in step.tool_calls:
            self._calls += 1
            tool_calls.append(call if call.id else ToolCall(f"call_{self._calls}", call.name, call.arguments))
        message = Message(role="assistant", content=step.text, tool_calls=tuple(tool_calls))
        usage = step.usage
        if usage is None:
            count = self._counter.tokenizer.count
            usage = Usage(
                input=self._counter.count_prompt(request.system, request.messages, request.tools),
                output=count(step.text) + sum(count(c.name) + count(c.arguments) for c in tool_calls),
            )
        finish = step.finish_reason or ("tool_calls" if tool_calls else "stop")
        return ModelReply(message=message, usage=usage, finish_reason=finish, model=self._name)
