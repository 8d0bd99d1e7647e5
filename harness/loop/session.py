"""The turn loop.

A `Session` owns one conversation: the frozen system prompt, the transcript, the tools and
the seams to memory, persistence and providers (`harness/loop/ports.py`). A turn, as design.md §4
specifies:

1. providers hear `on_turn_start`; recall (bounded wait; trivial messages skip it) is fenced
   onto the user message as `api_content`, which every later request replays byte-for-byte;
2. before every model call: the snapshot policy may rebuild the prefix (`live`,
   `invalidate_on_write`), and a prompt at or over the threshold is compressed first;
3. the request is streamed; text arrives as events; the request and its usage go to the trace;
4. tool calls run (concurrently when there are several) and their results are appended in
   call order; then back to 2, until a final answer or `limits.max_iterations`;
5. every message is persisted as it is appended; provider sync and prefetch run in the
   background, in the task group that owns the session.

`run_turn` is an async context manager that hands out a receive stream of events; a producer
task fills it. If the consumer leaves early the turn is cancelled and the transcript is
repaired to its last consistent state. A model error is raised from the `async with` block
after the stream ends; the transcript keeps every message that completed.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from harness.compress.plan import effective_threshold, repair_tool_pairs
from harness.config import KeelConfig
from harness.errors import ModelError, SessionError
from harness.events import (
    Event,
    RecallAttached,
    StopReason,
    TextDelta,
    ToolCallStarted,
    ToolResultReady,
    TurnEnded,
    UsageReported,
    Warning,
)
from harness.loop.ports import EndReason, MemoryBlocks, MemoryPort, ProviderHooks, Recorder
from harness.loop.system_prompt import PromptAssembler
from harness.models.base import ModelClient, ReplyDone
from harness.models.base import TextDelta as ModelTextDelta
from harness.tokens import TokenCounter
from harness.tools import ToolRegistry
from harness.trace import TraceBreakpoint, TraceSlot, TraceWriter, record_for_request
from harness.types import Message, ModelReply, ModelRequest, Usage
from memory import is_trivial
from prompts.fence import attach_recall
from prompts.slots import SystemPrompt

__all__ = ["Session", "new_session_id"]


def new_session_id() -> str:
    return time.strftime("%Y%m%d_%H%M%S_") + uuid.uuid4().hex[:6]


@dataclass(frozen=True, slots=True)
class _Anchor:
    """The last provider-reported prompt size and what it covered."""

    prompt_tokens: int
    n_messages: int
    version: int
    system: str


class Session:
    """One conversation. Build it with `harness.open_session`; tests may construct it directly."""

    def __init__(
        self,
        *,
        config: KeelConfig,
        model: ModelClient,
        counter: TokenCounter,
        tools: ToolRegistry,
        assembler: PromptAssembler,
        memory: MemoryPort | None,
        recorder: Recorder,
        providers: ProviderHooks,
        background: TaskGroup,
        trace: TraceWriter | None = None,
        summary_model: ModelClient | None = None,
        new_id: Callable[[], str] = new_session_id,
        today: Callable[[], date] = date.today,
    ) -> None:
        self.config = config
        self.model = model
        self.summary_model = summary_model or model
        self.counter = counter
        self.tools = tools
        self.assembler = assembler
        self.memory = memory
        self.recorder = recorder
        self.providers = providers
        self.trace = trace
        self._background = background
        self._new_id = new_id
        self.today = today
        self.session_id = new_id()
        self.parent_session_id: str | None = None
        self.turn = 0
        self._transcript: list[Message] = []
        self._version = 0
        self._anchor: _Anchor | None = None
        self.token_scale = 1.0
        """Provider tokens per tokenizer token, learned from reported usage: our tokenizer
        (cl100k by default) and the model's can differ by 2-3×, and the compression
        budgets must be in the model's tokens."""
        self._blocks = MemoryBlocks("", "")
        self.prompt = SystemPrompt("", ())
        self.usage_total = Usage()
        self.requests_sent = 0
        self._busy = False
        # compression state (harness/compressor.py reads and writes these)
        self.compressions = 0
        self.previous_summary: str | None = None
        self.ineffective_compressions = 0
        self.auto_compress_blocked = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Load memory, build the frozen prefix, and open the session row."""
        if self.memory is not None:
            await self.memory.load()
        await self.rebuild_prompt(refresh_static=True)
        await self.recorder.start_session(
            self.session_id, model=self.model.model_name, parent_session_id=self.parent_session_id
        )

    async def close(self) -> None:
        await self.recorder.end_session(self.session_id, reason="user_exit")

    async def new_conversation(self) -> None:
        """End this conversation and start a fresh one (memory reloaded, prompt rebuilt)."""
        if self._busy:
            raise SessionError("cannot start a new conversation while a turn is running")
        await self.recorder.end_session(self.session_id, reason="new_session")
        self.session_id = self._new_id()
        self.parent_session_id = None
        self.turn = 0
        self.replace_transcript([])
        self.compressions = 0
        self.previous_summary = None
        self.ineffective_compressions = 0
        self.auto_compress_blocked = False
        if self.memory is not None:
            await self.memory.load()
        await self.rebuild_prompt(refresh_static=True)
        await self.recorder.start_session(
            self.session_id, model=self.model.model_name, parent_session_id=None
        )

    async def rebuild_prompt(self, *, refresh_static: bool) -> None:
        """Rebuild the system prompt (session start, compression)."""
        if refresh_static:
            await self.assembler.refresh_static()
        self._blocks = await self.memory.prompt_blocks() if self.memory is not None else MemoryBlocks("", "")
        self.prompt = await self.assembler.build(self._blocks)

    # ------------------------------------------------------------------ views

    @property
    def transcript(self) -> tuple[Message, ...]:
        return tuple(self._transcript)

    @property
    def threshold_tokens(self) -> int:
        return effective_threshold(self.config.compression.threshold, self.config.model.context_window)

    def estimate_prompt_tokens(self) -> int:
        """Prompt tokens of the next request: the last reported count plus what was appended
        since, or our tokenizer's estimate when there is no valid report."""
        a = self._anchor
        if (
            a is not None
            and a.version == self._version
            and a.system == self.prompt.text
            and len(self._transcript) >= a.n_messages
        ):
            return a.prompt_tokens + self.scaled(
                self.counter.count_messages(self._transcript[a.n_messages :])
            )
        return self.scaled(self.counter.count_prompt(self.prompt.text, self._transcript, self.tools.specs()))

    def full_estimate(self) -> int:
        """The next prompt's size counted from scratch (scaled), ignoring the last report:
        compression reports before/after sizes with this, so the two are comparable."""
        return self.scaled(self.counter.count_prompt(self.prompt.text, self._transcript, self.tools.specs()))

    def scaled(self, tokens: int) -> int:
        """Our tokenizer's count converted to the model's tokens."""
        return math.ceil(tokens * self.token_scale)

    def count_message(self, message: Message) -> int:
        """One message's size in the model's tokens (an estimate)."""
        return self.scaled(self.counter.count_message(message))

    # ------------------------------------------------------------------ transcript

    async def append(self, message: Message) -> None:
        self._transcript.append(message)
        await self.recorder.append_message(
            self.session_id, message, token_count=self.counter.count_message(message)
        )

    async def continue_as_child(self, messages: Sequence[Message], *, reason: EndReason) -> None:
        """End this session row and continue in a child session holding `messages`."""
        old = self.session_id
        await self.recorder.end_session(old, reason=reason)
        self.parent_session_id = old
        self.session_id = self._new_id()
        await self.recorder.start_session(self.session_id, model=self.model.model_name, parent_session_id=old)
        self.replace_transcript([])
        for m in messages:
            await self.append(m)
        self._version += 1
        self._anchor = None

    def replace_transcript(self, messages: Sequence[Message]) -> None:
        """Swap the transcript for a rewritten one (compression); invalidates the usage anchor."""
        self._transcript = list(messages)
        self._version += 1
        self._anchor = None

    # ------------------------------------------------------------------ model calls

    def trace_slots(self) -> list[TraceSlot]:
        return [
            TraceSlot(name=s.name, start=s.start, end=s.end, token_start=s.token_start, token_end=s.token_end)
            for s in self.prompt.slots
        ]

    async def send_request(
        self,
        request: ModelRequest,
        *,
        client: ModelClient | None = None,
        on_text: Callable[[str], Awaitable[None]] | None = None,
        slots: list[TraceSlot] | None = None,
    ) -> tuple[ModelReply, UsageReported]:
        """Send one request (streamed), trace it, account its usage. Raises ModelError."""
        client = client or self.model
        started = time.monotonic()
        reply: ModelReply | None = None
        try:
            async with client.stream(request) as events:
                async for ev in events:
                    if isinstance(ev, ModelTextDelta):
                        if on_text is not None:
                            await on_text(ev.text)
                    elif isinstance(ev, ReplyDone):
                        reply = ev.reply
            if reply is None:
                raise SessionError("the model stream ended without a reply")
        except ModelError as exc:
            await self._trace(
                request, client, slots, None, time.monotonic() - started, f"{type(exc).__name__}: {exc}"
            )
            raise
        latency = time.monotonic() - started
        self.requests_sent += 1
        reported = reply.usage is not None
        usage = reply.usage or Usage(
            input=self.scaled(self.counter.count_prompt(request.system, request.messages, request.tools)),
            output=self.count_message(reply.message),
        )
        self.usage_total = self.usage_total + usage
        await self.recorder.add_usage(self.session_id, usage)
        await self._trace(request, client, slots, reply, latency, None)
        if reported and request.purpose == "turn":
            self._anchor = _Anchor(usage.prompt, len(request.messages), self._version, request.system)
            ours = self.counter.count_prompt(request.system, request.messages, request.tools)
            if ours > 0 and usage.prompt > 0:
                self.token_scale = min(4.0, max(0.25, usage.prompt / ours))
        usage_event = UsageReported(
            purpose=request.purpose,
            input=usage.input,
            output=usage.output,
            cache_read=usage.cache_read,
            cache_write=usage.cache_write,
            reported=reported,
            latency_s=latency,
        )
        return reply, usage_event

    async def _trace(
        self,
        request: ModelRequest,
        client: ModelClient,
        slots: list[TraceSlot] | None,
        reply: ModelReply | None,
        latency: float,
        error: str | None,
    ) -> None:
        if self.trace is None:
            return
        record = record_for_request(
            request,
            session_id=self.session_id,
            turn=self.turn,
            model=client.model_name,
            slots=slots
            if slots is not None
            else (self.trace_slots() if request.system == self.prompt.text else []),
            usage=None if reply is None else reply.usage,
            latency_s=latency,
            error=error,
            breakpoints=[]
            if reply is None
            else [
                TraceBreakpoint(at=b.at, index=b.index, system_chars=b.system_chars)
                for b in reply.breakpoints
            ],
            cache_ttl=None if reply is None else reply.cache_ttl,
        )
        await self.trace.write(record)

    # ------------------------------------------------------------------ turns

    @asynccontextmanager
    async def run_turn(self, text: str) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
        """Run one user turn; iterate the yielded stream for its events.

        Raises:
            SessionError: another turn is still running.
            ModelError: the model failed (after retries); raised when the block exits.
        """
        if self._busy:
            raise SessionError("a turn is already running in this session; wait for it to end")
        self._busy = True
        send, recv = anyio.create_memory_object_stream[Event](max_buffer_size=math.inf)
        failure: list[Exception] = []

        async def produce() -> None:
            try:
                async with send:
                    await self._turn(text, send)
            except Exception as exc:  # surfaced to the caller after the stream ends
                failure.append(exc)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce)
                async with recv:
                    yield recv
                tg.cancel_scope.cancel()
        finally:
            self._busy = False
        if failure:
            raise failure[0]

    async def compress(self, *, focus: str | None = None) -> list[Event]:
        """Compress now (flush, summarize, reload, rebuild), whatever the prompt size."""
        from harness.compress.run import compress_session  # compressor imports this module

        if self._busy:
            raise SessionError("cannot compress while a turn is running")
        events: list[Event] = []

        async def collect(ev: Event) -> None:
            events.append(ev)

        self.auto_compress_blocked = False
        self.ineffective_compressions = 0
        await compress_session(self, collect, manual=True, focus=focus)
        return events

    async def _turn(self, text: str, send: MemoryObjectSendStream[Event]) -> None:
        self.turn += 1
        if self.memory is not None:
            self.memory.start_turn()
        await self.providers.on_turn_start(self.turn, text)
        api_content: str | None = None
        if self.config.recall.enabled and not is_trivial(text):
            recalled = ""
            with anyio.move_on_after(self.config.recall.wait_s):
                recalled = await self.providers.recall(turn=self.turn, query=text)
            api_content = attach_recall(text, recalled)
            if api_content is not None:
                await send.send(RecallAttached(chars=len(recalled)))
        user = Message(role="user", content=text, api_content=api_content)
        consistent = False
        try:
            await self.append(user)
            final_text, iterations, stop = await self._loop(send)
            consistent = True
        finally:
            if not consistent:
                self._repair()  # synchronous: nothing to shield
        if api_content is not None and not self.config.recall.persist:
            self._drop_recall(user)
        self.providers.after_turn(self._background, turn=self.turn, user=text, assistant=final_text)
        await send.send(TurnEnded(final_text=final_text, iterations=iterations, stop_reason=stop))

    async def _loop(self, send: MemoryObjectSendStream[Event]) -> tuple[str, int, StopReason]:
        limit = self.config.limits.max_iterations
        for iteration in range(1, limit + 1):
            await self._before_call(send)
            request = ModelRequest(
                system=self.prompt.text,
                messages=tuple(self._transcript),
                tools=self.tools.specs(),
                max_tokens=self.config.model.max_output_tokens,
                temperature=self.config.model.temperature,
                purpose="turn",
                stable_prefix_chars=len(self.prompt.text),
            )

            async def on_text(t: str) -> None:
                await send.send(TextDelta(t))

            reply, usage_ev = await self.send_request(request, on_text=on_text)
            await send.send(usage_ev)
            await self.append(reply.message)
            calls = reply.message.tool_calls
            if not calls:
                return reply.message.content, iteration, "final"
            for call in calls:
                await send.send(ToolCallStarted(call_id=call.id, name=call.name, arguments=call.arguments))
            for result, out in await self.tools.run_all(calls):
                await self.append(result.to_message())
                await send.send(
                    ToolResultReady(
                        call_id=result.call_id,
                        name=result.name,
                        content=result.content,
                        is_error=result.is_error,
                    )
                )
                for ev in out.events:
                    await send.send(ev)
        await send.send(
            Warning(
                f"stopped after {limit} model calls in one turn (limits.max_iterations); "
                "the answer may be incomplete"
            )
        )
        last = self._transcript[-1] if self._transcript else None
        return (
            (last.content if last is not None and last.role == "assistant" else ""),
            limit,
            "max_iterations",
        )

    async def _before_call(self, send: MemoryObjectSendStream[Event]) -> None:
        if self.memory is not None:
            blocks = await self.memory.prompt_blocks()
            if blocks != self._blocks:
                self._blocks = blocks
                self.prompt = await self.assembler.build(blocks)
        if not self.config.compression.enabled or self.auto_compress_blocked:
            return
        if self.estimate_prompt_tokens() >= self.threshold_tokens:
            from harness.compress.run import compress_session  # compressor imports this module

            await compress_session(self, send.send, manual=False, focus=None)

    def _repair(self) -> None:
        repaired = repair_tool_pairs(self._transcript)
        if repaired != self._transcript:
            self.replace_transcript(repaired)

    def _drop_recall(self, user: Message) -> None:
        for i, m in enumerate(self._transcript):
            if m is user:
                self._transcript[i] = Message(role="user", content=user.content)
                self._version += 1
                return
