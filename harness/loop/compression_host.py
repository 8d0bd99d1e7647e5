"""The session's parts seen as a `CompressionHost`: what `compress/` may touch, and no more.

Compression never reaches into the session; it asks this adapter, which is built from the
session's parts (transcript, prompt state, estimator, model calls, tools, providers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date

from harness.events import FlushEntry, UsageReported
from harness.loop.calls import ModelCalls
from harness.loop.ports import ProviderHooks
from harness.loop.system_prompt import PromptState
from harness.loop.transcript import Transcript
from harness.tools import Tool, ToolRegistry
from harness.types import Message, ModelReply, ModelRequest, ToolSpec
from memory import FlushMode

__all__ = ["SessionHost"]


@dataclass(frozen=True, slots=True)
class SessionHost:
    """Implements `harness.compress.CompressionHost` over one session's parts."""

    transcript: Transcript
    system: PromptState
    calls: ModelCalls
    """The model calls, and the estimator they keep current."""
    tools: ToolRegistry
    providers: ProviderHooks
    calendar: Callable[[], date]

    @property
    def session_id(self) -> str:
        return self.transcript.session_id

    @property
    def turn(self) -> int:
        return self.transcript.turn

    @property
    def messages(self) -> Sequence[Message]:
        return self.transcript.messages

    async def save(self) -> None:
        await self.transcript.save()

    @property
    def system_prompt(self) -> str:
        return self.system.text

    @property
    def memory_snapshot(self) -> str:
        prompt = self.system.prompt
        return "\n".join(b for b in (prompt.slot_text("memory"), prompt.slot_text("user")) if b)

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return self.tools.specs()

    def tool(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def count(self, message: Message) -> int:
        return self.calls.estimator.count_message(message)

    def _prompt(self) -> tuple[str, Sequence[Message], tuple[ToolSpec, ...]]:
        """What a request would carry now: the system prompt, the messages, the tool specs."""
        return self.system.text, self.transcript.messages, self.tools.specs()

    def prompt_estimate(self) -> int:
        return self.calls.estimator.estimate(*self._prompt(), version=self.transcript.version)

    def base_estimate(self) -> int:
        return self.calls.estimator.full(self.system.text, (), self.tools.specs())

    def full_estimate(self) -> int:
        return self.calls.estimator.full(*self._prompt(), version=self.transcript.version)

    def today(self) -> date:
        return self.calendar()

    async def call(self, request: ModelRequest, *, summary: bool = False) -> tuple[ModelReply, UsageReported]:
        return await self.calls.send(request, summary=summary)

    def flushing(self) -> AbstractContextManager[None]:
        return self.providers.flushing()

    async def record_flush(self, *, mode: FlushMode, entries: Sequence[FlushEntry], reply_text: str) -> None:
        await self.transcript.recorder.record_flush(
            self.transcript.session_id, mode=mode, entries=entries, reply_text=reply_text
        )

    async def pre_compress(self, middle: Sequence[Message]) -> str:
        return await self.providers.on_pre_compress(middle)

    async def reload_memory(self) -> None:
        # the same work as `rebuild(reload_memory=True)`, as two telemetry steps
        telemetry = self.calls.telemetry
        if self.system.memory is not None:
            with telemetry.step("reload"):
                await self.system.memory.load()
        with telemetry.step("rebuild"):
            await self.system.rebuild(reload_memory=False)

    async def continue_as_child(self, messages: Sequence[Message]) -> None:
        ended = self.transcript.messages
        old = await self.transcript.continue_as_child(messages)
        self.calls.estimator.invalidate()
        await self.providers.on_session_end(ended)
        await self.providers.on_session_switch(
            self.transcript.session_id, parent_session_id=old, reason="compression"
        )
