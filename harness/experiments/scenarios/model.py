"""A deterministic model that plays a scenario's scripted replies.

Turn requests get the current turn's scripted replies in order (then a short generic answer
if the loop asks for more). Flush requests get memory `add` calls for every probe fact
planted so far — a model that flushes perfectly — so an experiment can tell what the flush
*mode* costs apart from what a model chooses to save. Summary requests get a deterministic
checkpoint that keeps only the last few user asks, the way a lossy summary loses details.

With a real endpoint the same scenario runs unchanged: only the user turns are sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count

from harness.experiments.scenarios.spec import ReplySpec, Scenario
from harness.models.base import ModelEvent, ModelTextDelta, ReplyDone
from harness.types import Message, ModelReply, ModelRequest, ToolCall

__all__ = ["ScenarioModel"]

_ASK = re.compile(r"^\[USER\]: (.*)$", re.MULTILINE)


class ScenarioModel:
    """Plays `scenario` turn by turn; the runner calls `begin_turn(n)` before each user turn."""

    def __init__(self, scenario: Scenario, *, name: str = "scenario-model", flush_saves: bool = True) -> None:
        self._scenario = scenario
        self._name = name
        self._flush_saves = flush_saves
        self._turn = 0
        self._queue: list[ReplySpec] = []
        self._ids = count(1)
        self.requests: list[ModelRequest] = []

    @property
    def model_name(self) -> str:
        return self._name

    def begin_turn(self, turn: int) -> None:
        self._turn = turn
        self._queue = list(self._scenario.turns[turn - 1].replies)

    def _call(self, name: str, arguments: object) -> ToolCall:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        return ToolCall(id=f"call_{next(self._ids)}", name=name, arguments=args)

    def _turn_reply(self, request: ModelRequest) -> Message:
        available = {t.name for t in request.tools}
        while self._queue:
            spec = self._queue.pop(0)
            calls = tuple(self._call(c.name, c.arguments) for c in spec.tool_calls if c.name in available)
            if calls or spec.say:
                return Message(role="assistant", content=spec.say, tool_calls=calls)
        return Message(role="assistant", content="Understood.")

    def _flush_reply(self) -> Message:
        if not self._flush_saves:
            return Message(role="assistant", content="Nothing to save.")
        calls = tuple(
            self._call("memory", {"action": "add", "target": p.target, "content": p.fact})
            for p in self._scenario.probes
            if p.turn <= self._turn
        )
        return Message(role="assistant", content="" if calls else "Nothing to save.", tool_calls=calls)

    @staticmethod
    def _summary_reply(request: ModelRequest) -> Message:
        prompt = request.messages[-1].content if request.messages else ""
        asks = _ASK.findall(prompt)[-3:]
        lines = ["## Latest request", asks[-1][:300] if asks else "(none)", "", "## Done so far"]
        lines += [f"{i}. Answered: {a[:160]}" for i, a in enumerate(asks, 1)]
        return Message(role="assistant", content="\n".join(lines))

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        if request.purpose == "flush":
            message = self._flush_reply()
        elif request.purpose == "summary":
            message = self._summary_reply(request)
        else:
            message = self._turn_reply(request)
        return ModelReply(
            message=message, finish_reason="tool_calls" if message.tool_calls else "stop", model=self._name
        )

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        reply = await self.complete(request)

        async def events() -> AsyncIterator[ModelEvent]:
            if reply.message.content:
                yield ModelTextDelta(reply.message.content)
            yield ReplyDone(reply)

        yield events()
