"""The turn loop (docs/architecture.md §4).

A `Session` owns one conversation and composes its parts: the transcript and its lineage
(`transcript.py`), the frozen system prompt (`system_prompt.py`), size estimates
(`estimate.py`), the one model-call path (`calls.py`), the tools, the seams to memory and
providers (`ports.py`), and the compressor (`harness/compress/` via `compression_host.py`).
`run_turn` hands out a stream of events filled by a producer task (with `send_nowait`: the
buffer is unbounded, and an awaited send cost a scheduler round trip for the producer and a
fresh wait for the consumer per event); if the consumer leaves early the turn is cancelled
and the transcript repaired; a model error is raised when the
block exits, and the transcript keeps what completed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from harness.compress.flush import FlushOutcome
from harness.compress.review import review_memory
from harness.compress.run import Compressor
from harness.errors import ModelError, SessionError
from harness.events import (
    Event,
    PrefillProgress,
    RecallAttached,
    StopReason,
    TextDelta,
    ToolCallStarted,
    ToolResultReady,
    TurnEnded,
    Warning,
)
from harness.lifecycle import CachedPrefix, CacheKeeper, Plan
from harness.loop._stream import produced_events
from harness.loop._unparsed import HeldText, salvage_call, unparsed_call
from harness.loop.compression_host import SessionHost
from harness.loop.parts import SessionParts
from harness.models.base import PromptProgress
from harness.tools import error_json
from harness.trace import TraceRefresh
from harness.types import Message, ModelReply, ModelRequest, ToolCall, ToolResult
from memory import MemoryLayerError, is_trivial
from prompts import SystemPrompt, attach_recall, cap_recall

__all__ = ["Session"]


class Session:
    """One conversation. Build it with `harness.open_session`; tests may compose `SessionParts` directly."""

    def __init__(self, parts: SessionParts) -> None:
        path = parts.path
        self.settings = parts.settings
        self.model = path.calls.model
        self.tools = parts.tools
        self.memory = path.system.memory
        self.providers = parts.providers
        self.today = parts.today
        self.warn = path.warnings
        """Show a warning to the user: in the running turn's events, else with the next turn's."""
        self.system = path.system
        self.calls = path.calls
        self.estimator = path.calls.estimator
        self._spawn = parts.spawn
        self._lease = parts.lease
        self._catch_up = parts.catch_up
        self._generation: tuple[str, int] | None = None
        """The lineage and lease generation of this session's last hold of its lease."""
        self._alone = False
        """Nobody held the lease between this session's last two holds (see `_leased`)."""
        self._background = parts.background
        self._busy = False
        self._transcript = path.transcript
        self.compressor = Compressor(parts.settings.compression, telemetry=path.calls.telemetry)
        self._host = SessionHost(
            path.transcript, path.system, path.calls, parts.tools, parts.providers, parts.today
        )
        self.cache_keeper = CacheKeeper(
            parts.settings.cache,
            parts.settings.lifecycle,
            prefix=lambda: self.calls.prefix,
            refresh=self._refresh_cache,
            compact=self._compact_before_expiry,
        )
        """Keeps the provider's cached prefix through waits (`cache_lifecycle`); off by default."""

    @property
    def turn(self) -> int:
        """User turns begun in this conversation."""
        return self._transcript.turn

    @property
    def session_id(self) -> str:
        return self._transcript.session_id

    @property
    def parent_session_id(self) -> str | None:
        return self._transcript.parent_session_id

    @property
    def unsaved(self) -> int:
        """Messages neither in the session store nor journalled (only when even the journal failed)."""
        return self._transcript.unsaved

    @property
    def transcript(self) -> tuple[Message, ...]:
        return self._transcript.messages

    @property
    def prompt(self) -> SystemPrompt:
        return self.system.prompt

    def estimate_prompt_tokens(self) -> int:
        """The next request's prompt size in the model's tokens (from the last report where valid)."""
        return self._host.prompt_estimate()

    def replace_transcript(self, messages: Sequence[Message]) -> None:
        """Swap the in-memory transcript (benchmarks); nothing is persisted."""
        self._transcript.replace(messages)
        self.estimator.invalidate()

    async def inject(self, messages: Sequence[Message]) -> None:
        """Append recorded messages to the transcript as if they had been said: persisted and
        searchable like any other, but no model call is made (replaying a conversation).

        Raises:
            SessionError: a turn is running.
        """
        if self._busy:
            raise SessionError("cannot add messages while a turn is running")
        for message in messages:
            await self._transcript.append(message)

    # ------------------------------------------------------------------ lifecycle

    @asynccontextmanager
    async def _leased(self) -> AsyncIterator[None]:
        """The session lease for one turn or compression (nothing when the session has none).

        Keyed by the lineage root, not the session id: a compression inside a turn ends this
        row and continues in a child with a new id while the turn still runs. Under the
        parent's id a second worker resuming the child would find its lease free and
        interleave with this turn; under the root both ask for the same lease.

        The lease's generation tells whether anyone held it since this session did: if not,
        the store holds nothing this session has not seen (`_alone`)."""
        if self._lease is None:
            yield
            return
        root = self._transcript.lineage_root
        async with self._lease.hold(root) as generation:
            last, self._generation = self._generation, None if generation is None else (root, generation)
            self._alone = generation is not None and last == (root, generation - 1)
            yield

    async def start(self) -> None:
        """Load memory, build the frozen prefix, and open the session row."""
        await self.system.rebuild(reload_memory=True)
        await self._transcript.open()

    async def resume(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        turns: int,
        parent_session_id: str | None = None,
        lineage_root: str | None = None,
    ) -> None:
        """Continue a recorded session (maybe started on another worker) instead of `start`.

        The caller pins the memory snapshot the session row recorded before calling, so the
        rebuilt prefix is byte-identical to the one the session started with; `lineage_root`
        (the first ancestor, from the store) keys the session lease.
        """
        await self.system.rebuild(reload_memory=True)
        self._transcript.resume(
            session_id, messages, turns=turns, parent_session_id=parent_session_id, lineage_root=lineage_root
        )
        # Providers were started under the id the transcript drew; they follow the resumed one.
        await self.providers.on_session_switch(
            session_id, parent_session_id=parent_session_id, reason="resume"
        )

    async def close(self) -> None:
        """End the conversation: providers hear `on_session_end`; the row ends as `user_exit`."""
        await self.providers.on_session_end(self._transcript.messages)
        await self._transcript.end("user_exit")

    async def new_conversation(self) -> None:
        """End this conversation and start a fresh one (memory reloaded, prompt rebuilt)."""
        if self._busy:
            raise SessionError("cannot start a new conversation while a turn is running")
        await self.providers.on_session_end(self._transcript.messages)
        await self._transcript.restart()
        self.calls.prefix = None
        self.compressor.reset()
        self.estimator.invalidate()
        await self.system.rebuild(reload_memory=True)
        await self.providers.on_session_switch(self.session_id, parent_session_id=None, reason="new")

    async def compress(self, *, focus: str | None = None) -> list[Event]:
        """Compress now (flush, summarize, reload, rebuild), whatever the prompt size."""
        if self._busy:
            raise SessionError("cannot compress while a turn is running")
        events: list[Event] = []

        async def collect(ev: Event) -> None:
            events.append(ev)

        async with self._leased():
            await self.compressor.compress(self._host, collect, manual=True, focus=focus)
        self.calls.prefix = None  # a new prefix: the next turn request writes it
        return events

    async def review_memory(self, *, turns: int | None = None) -> FlushOutcome | None:
        """One memory review now (what `compression.review_interval` runs in the background):
        memory-only calls that save the durable facts of the last `turns` user turns (None:
        `review_interval` of them; 0: the whole transcript); None when none ran.

        Raises:
            SessionError: a turn is running.
        """
        if self._busy:
            raise SessionError("cannot review memory while a turn is running")
        c = self.settings.compression
        return await review_memory(self._host, c, turns=c.review_interval if turns is None else turns)

    async def _review_in_background(self) -> None:
        c = self.settings.compression
        await review_memory(self._host, c, turns=c.review_interval)

    async def delegate(self, task: str) -> str:
        """Run `task` in a subagent (fresh session, context `subagent`); providers hear `on_delegation`.

        Raises:
            SessionError: this session was built without a way to start subagents.
        """
        if self._spawn is None:
            raise SessionError("this session cannot start subagents (open it with harness.open_session)")
        result, child_id = await self._spawn(task)
        await self.providers.on_delegation(task, result, child_session_id=child_id)
        return result

    # ------------------------------------------------------------------ the cache through waits

    @asynccontextmanager
    async def idle(self) -> AsyncIterator[None]:
        """Wrap the wait for the user's next message: the cached prefix is refreshed, or the
        session compacted, before it expires when `cache_lifecycle` says so (nothing when off).

            async with session.idle():
                text = await read_the_next_message()
        """
        if self._busy:
            raise SessionError("a turn is running; idle() wraps the wait between turns")
        async with self.cache_keeper.waiting("user_idle"):
            yield

    async def _refresh_cache(self, plan: Plan, prefix: CachedPrefix) -> None:
        request = replace(prefix.request, max_tokens=1, purpose="keep_warm")
        note = TraceRefresh(
            reason=plan.reason, cost_usd=plan.cost, saving_usd=plan.saving, prefix_tokens=prefix.tokens
        )
        try:
            await self.calls.send(request, refresh=note)
        except ModelError as exc:  # a failed refresh costs the cache, never the turn
            self.warn(f"a cache refresh failed ({exc}); the next request may write the prompt again")

    async def _compact_before_expiry(self, plan: Plan) -> None:
        del plan
        try:
            await self.compress()
        except (SessionError, ModelError, MemoryLayerError) as exc:
            self.warn(f"the compaction before the cache expired did not run ({exc})")

    # ------------------------------------------------------------------ turns

    @asynccontextmanager
    async def run_turn(self, text: str) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
        """Run one user turn; iterate the yielded stream for its events.

        Raises:
            SessionError: another turn is still running, or `text` is longer than
                `limits.max_message_chars` (nothing is stored or sent).
            ModelError: the model failed (after retries); raised when the block exits.
        """
        if self._busy:
            raise SessionError("a turn is already running in this session; wait for it to end")
        limit = self.settings.max_message_chars
        if len(text) > limit:
            raise SessionError(
                f"your message is {len(text):,} characters; one message may hold at most {limit:,} "
                "(limits.max_message_chars). Send a shorter one, or save the text to a file and ask about it."
            )
        self._busy = True

        async def produce(send: MemoryObjectSendStream[Event]) -> None:
            async with self._leased():  # the turn and any compression in it
                await self._catch_up_with_store()
                try:
                    with self.warn.streaming(send):
                        await self._turn(text, send)
                finally:
                    await self.calls.flush_trace()

        try:
            async with produced_events(produce) as events:
                yield events
        finally:
            self._busy = False

    async def _catch_up_with_store(self) -> None:
        """Take the turns another worker added to this session while we did not hold its lease."""
        t = self._transcript
        if self._catch_up is None or (self._alone and not t.fenced):
            return  # nobody else held the lease since our last turn: nothing to take
        try:
            # After a fenced write our copy holds turns the store never took: reload it whole.
            newer = await self._catch_up(self.session_id, 0 if t.fenced else len(t))
        except (MemoryLayerError, OSError) as exc:
            # the store is down: this turn goes on from what we hold (its writes are journalled)
            self.warn(f"could not check the session store for turns added elsewhere ({exc}); going on")
            return
        if newer is not None:
            turns = sum(1 for m in newer if m.role == "user")
            t.fenced = False
            t.resume(
                t.session_id,
                newer,
                turns=turns,
                parent_session_id=t.parent_session_id,
                lineage_root=t.lineage_root,
            )
            self.estimator.invalidate()

    async def _turn(self, text: str, send: MemoryObjectSendStream[Event]) -> None:
        """One turn, as a `handle_conversation_turn` span when telemetry is on."""
        t = self._transcript
        t.begin_turn()
        with self.calls.telemetry.turn(
            conversation_id=t.lineage_root, session_id=t.session_id, turn=t.turn
        ) as span:
            ended = await self._answer(text, send)
            span.ended(stop_reason=ended.stop_reason, iterations=ended.iterations)
        send.send_nowait(ended)

    async def _answer(self, text: str, send: MemoryObjectSendStream[Event]) -> TurnEnded:
        """Recall, the model/tool loop, then background sync and the next turn's prefetch."""
        for pending in self.warn.take_pending():
            send.send_nowait(Warning(pending))
        if self.memory is not None:
            self.memory.start_turn()
        await self.providers.on_turn_start(self.turn, text)
        trivial = is_trivial(text)  # judged once: recall now, and the prefetch after the turn
        api_content = None if trivial else await self._recall(text, send)
        user = Message(role="user", content=text, api_content=api_content)
        # Recall that must not persist is never stored: a resumed session replays these bytes.
        drop = api_content is not None and not self.settings.recall_persist
        consistent = False
        saver = anyio.CancelScope()  # a slow turn's rows are written as they reach a second's wait
        self._background.start_soon(self._keep_saved, saver)
        try:
            user = await self._transcript.append(
                user, stored=Message(role="user", content=text) if drop else None, defer=True
            )
            final_text, iterations, stop = await self._loop(send)
            consistent = True
        finally:
            saver.cancel()
            if not consistent:
                self._transcript.repair()  # synchronous: nothing to shield
                self.estimator.invalidate()
            with anyio.CancelScope(shield=True):  # a cancelled turn still stores what was said
                await self._transcript.save()  # the turn's rows, in one transaction
        if drop:
            self._transcript.drop_recall(user)
        self.providers.after_turn(
            self._background, turn=self.turn, user=text, assistant=final_text, trivial=trivial
        )
        interval = self.settings.compression.review_interval
        if interval and self.turn % interval == 0:
            # Off the hot path: the review reads this turn's transcript while the user reads the answer.
            self._background.start_soon(self._review_in_background)
        return TurnEnded(final_text=final_text, iterations=iterations, stop_reason=stop)

    async def _keep_saved(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self._transcript.keep_saved()

    async def _recall(self, text: str, send: MemoryObjectSendStream[Event]) -> str | None:
        if not self.settings.recall:
            return None
        recalled = await self.providers.recall(turn=self.turn, query=text, wait_s=self.settings.recall_wait_s)
        recalled = cap_recall(recalled, self.settings.recall_max_chars)
        api_content = attach_recall(text, recalled)
        if api_content is not None:
            send.send_nowait(RecallAttached(chars=len(recalled)))
        return api_content

    def _salvage(self, text: str, iteration: int) -> ToolCall | None:
        """The call a reply wrote as text, when it can be read unambiguously (run, not refused)."""
        return salvage_call(text, self.tools.specs(), call_id=f"text-call-{self.turn}-{iteration}")

    async def _refuse_unparsed(self, why: str, iteration: int, send: MemoryObjectSendStream[Event]) -> None:
        """Record the unreadable reply as a refused call, so the model hears why and tries again."""
        call = ToolCall(f"unparsed-{self.turn}-{iteration}", "unparsed_call", "{}")
        await self._transcript.append(Message("assistant", "", tool_calls=(call,)), defer=True)
        text = error_json(
            f"your reply could not be read as an answer or a tool call ({why}); call tools only through "
            "the tool-call format, with JSON arguments, or answer in plain text"
        )
        result = ToolResult(call.id, call.name, text, True)
        await self._transcript.append(result.to_message(), defer=True)
        send.send_nowait(ToolResultReady(call_id=call.id, name=call.name, content=text, is_error=True))

    async def _ask(
        self, request: ModelRequest, send: MemoryObjectSendStream[Event]
    ) -> tuple[ModelReply, HeldText]:
        """One model call, its text streamed as it comes except what could be markup (held back)."""
        held = HeldText()

        async def show(delta: str) -> None:
            if text := held.feed(delta):
                send.send_nowait(TextDelta(text))

        def progress(ev: PromptProgress) -> None:
            send.send_nowait(PrefillProgress(ev.done, ev.total))

        reply, usage = await self.calls.send(request, on_text=show, on_progress=progress)
        send.send_nowait(usage)
        return reply, held

    async def _loop(self, send: MemoryObjectSendStream[Event]) -> tuple[str, int, StopReason]:
        limit = self.settings.max_iterations
        retried_empty = words = False  # words: the next reply must be an answer, not a call
        for iteration in range(1, limit + 1):
            if iteration == 1 or self.settings.snapshot_policy == "live":
                # A write made during this turn shows in the prompt from the next turn on
                # (`invalidate_on_write`), so the turn's own requests share one prefix.
                await self.system.refresh()
            await self.compressor.maybe_compress(self._host, send.send)
            request = ModelRequest(
                system=self.system.text,
                messages=self._transcript.messages,
                tools=self.tools.specs(),
                # the last call a turn may make must be words: the user always gets an answer
                tool_choice="none" if words or iteration == limit else "auto",
                max_tokens=self.settings.max_output_tokens,
                temperature=self.settings.temperature,
                purpose="turn",
                stable_prefix_chars=self.system.stable_chars,
                deferred_tools=self.tools.deferred_specs(),
            )
            reply, held = await self._ask(request, send)
            calls = reply.message.tool_calls
            if not calls and not reply.message.content.strip():
                # An empty reply (small local models produce them) is asked again once, unrecorded.
                if not retried_empty:
                    # after a tool result the user must get words: the second ask allows no call
                    retried_empty, words = True, self._transcript.messages[-1].role == "tool"
                    continue
                send.send_nowait(
                    Warning("the model sent an empty reply twice; ask again, or rephrase the question")
                )
            salvaged = None if calls else self._salvage(reply.message.content, iteration)
            if salvaged is not None:  # the reply was a call written as text: run it (its text stays held)
                reply = replace(reply, message=Message("assistant", "", tool_calls=(salvaged,)))
                calls = reply.message.tool_calls
            refused = None if calls else unparsed_call(reply.message.content, self.tools.names)
            if refused is not None:
                if iteration < limit:
                    # after a tool result an unreadable reply was meant as the answer: ask for words
                    words = words or self._transcript.messages[-1].role == "tool"
                    await self._refuse_unparsed(refused, iteration, send)
                    continue
            elif salvaged is None and (rest := held.release()):  # held text that was part of an answer
                send.send_nowait(TextDelta(rest))
            await self._transcript.append(reply.message, defer=True)
            if not calls:
                return reply.message.content, iteration, "final"
            for call in calls:
                send.send_nowait(ToolCallStarted(call_id=call.id, name=call.name, arguments=call.arguments))
            async with self.cache_keeper.waiting("tool_wait"):
                results = await self.tools.run_all(calls)
            for result, out in results:
                # The transcript may keep a capped copy; the event carries the full output.
                await self._transcript.append_tool_result(
                    result.to_message(), cap=self.settings.tool_result_chars, defer=True
                )
                ready = ToolResultReady(
                    call_id=result.call_id, name=result.name, content=result.content, is_error=result.is_error
                )
                send.send_nowait(ready)
                for ev in out.events:
                    send.send_nowait(ev)
        stopped = f"stopped after {limit} model calls in one turn (limits.max_iterations); the answer may be incomplete"
        send.send_nowait(Warning(stopped))
        last = self._transcript.messages[-1]
        return (last.content if last.role == "assistant" else ""), limit, "max_iterations"
