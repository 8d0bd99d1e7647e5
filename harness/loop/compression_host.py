"""The session's parts seen as a `CompressionHost`: what `compress/` may touch, and no more.

Compression never reaches into the session; it asks this adapter, which is built from the
session's parts (transcript, prompt state, estimator, model calls, tools, providers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import date

from harness.events import FlushEntry, UsageReported
from harness.loop.calls import ModelCalls
from harness.loop.estimate import PromptEstimator
from harness.loop.ports import ProviderHooks, Recorder
from harness.loop.system_prompt import PromptState
from harness.loop.transcript import Transcript
from harness.tools import Tool, ToolRegistry
from harness.types import Message, ModelReply, ModelRequest, ToolSpec
from memory import FlushMode

__all__ = ["SessionHost"]


class SessionHost:
    """Implements `harness.compress.CompressionHost` over one session's parts."""

    def __init__(
        self,
        *,
        transcript: Transcript,
        system: PromptState,
        estimator: PromptEstimator,
        calls: ModelCalls,
        tools: ToolRegistry,
        providers: ProviderHooks,
        recorder: Recorder,
        today: Callable[[], date],
    ) -> None:
        self._transcript = transcript
        self._system = system
        self._estimator = estimator
        self._calls = calls
        self._tools = tools
        self._providers = providers
        self._recorder = recorder
        self._today = today

    @property
    def session_id(self) -> str:
        return self._transcript.session_id

    @property
    def turn(self) -> int:
        return self._transcript.turn

    @property
    def messages(self) -> Sequence[Message]:
        return self._transcript.messages

    async def save(self) -> None:
        await self._transcript.save()

    @property
    def system_prompt(self) -> str:
        return self._system.text

    @property
    def memory_snapshot(self) -> str:
        prompt = self._system.prompt
        return "\n".join(b for b in (prompt.slot_text("memory"), prompt.slot_text("user")) if b)

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return self._tools.specs()

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def count(self, message: Message) -> int:
        return self._estimator.count_message(message)

    def prompt_estimate(self) -> int:
        return self._estimator.estimate(
            self._system.text,
            self._transcript.messages,
            self._tools.specs(),
            version=self._transcript.version,
        )

    def base_estimate(self) -> int:
        return self._estimator.full(self._system.text, (), self._tools.specs())

    def full_estimate(self) -> int:
        return self._estimator.full(
            self._system.text,
            self._transcript.messages,
            self._tools.specs(),
            version=self._transcript.version,
        )

    def today(self) -> date:
        return self._today()

    async def call(self, request: ModelRequest, *, summary: bool = False) -> tuple[ModelReply, UsageReported]:
        return await self._calls.send(request, summary=summary)

    def flushing(self) -> AbstractContextManager[None]:
        return self._providers.flushing()

    async def record_flush(self, *, mode: FlushMode, entries: Sequence[FlushEntry], reply_text: str) -> None:
        await self._recorder.record_flush(
            self._transcript.session_id, mode=mode, entries=entries, reply_text=reply_text
        )

    async def pre_compress(self, middle: Sequence[Message]) -> str:
        return await self._providers.on_pre_compress(middle)

    async def reload_memory(self) -> None:
        # the same work as `rebuild(reload_memory=True)`, as two telemetry steps
        telemetry = self._calls.telemetry
        if self._system.memory is not None:
            with telemetry.step("reload"):
                await self._system.memory.load()
        with telemetry.step("rebuild"):
            await self._system.rebuild(reload_memory=False)

    async def continue_as_child(self, messages: Sequence[Message]) -> None:
        ended = self._transcript.messages
        old = await self._transcript.continue_as_child(messages)
        self._estimator.invalidate()
        await self._providers.on_session_end(ended)
        await self._providers.on_session_switch(
            self._transcript.session_id, parent_session_id=old, reason="compression"
        )
