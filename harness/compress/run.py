"""Compression with the memory flush — the order is the specification (docs/architecture.md §5):

1. **Flush**: one model call over the transcript plus the flush note (or, in pieces, over
   the turns no flush has read: the dropped ones, and the protected head at the first
   compression); only `memory` calls run, directly against the store; the note and the
   reply never enter the transcript (they are logged as a flush record).
2. **Summarize the middle**: plan the cut, stub bulky tool outputs, ask providers for
   `on_pre_compress` text, one call to the summary model. Network, auth and overload
   errors abort with the transcript unchanged; any other failure inserts a deterministic
   fallback summary and warns. The summary message carries the identifier index.
3. **Reload and rebuild**: `load()` the curated store (a new frozen snapshot that now
   holds what the flush saved) and rebuild the system prompt.
4. **Lineage**: end the session row with reason `compression`, continue in a child
   session whose parent is the old one; providers hear about the switch.

`Compressor` owns the compression state of one session (how many ran, the previous
summary, anti-thrash and back-off) and talks to the session only through
`CompressionHost`. With telemetry on, a compression is a `keel.compression` span whose
children are its steps: one `keel.compression.flush` per flush piece, the summary, and
(from the host) reload and rebuild; the model requests nest inside their steps.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from harness.compress.flush import FlushOutcome, build_flush_request, flush_pieces, flush_shape, flush_system
from harness.compress.host import CompressionHost, CompressionSettings, Emit
from harness.compress.identifiers import extract_identifiers
from harness.compress.pieces import flush_each_piece
from harness.compress.plan import plan_cut, repair_tool_pairs, stub_bulky_tool_outputs, summary_target_tokens
from harness.compress.summary import fallback_summary, serialize_turns, summary_message, summary_prompt
from harness.errors import ModelAuthError, ModelError, RetryableModelError
from harness.events import (
    CompressionFinished,
    CompressionStarted,
    Event,
    FlushCompleted,
    FlushEntry,
    UsageReported,
    Warning,
)
from harness.telemetry import NO_TELEMETRY, Telemetry
from harness.types import Message, ModelRequest
from memory import MEMORY_TOOL_NAME

__all__ = ["MAX_ABORTS", "Compressor"]

# Failures that say "try later", not "the summarizer is broken": dropping turns without a
# real summary would lose them, so the compression is abandoned instead.
_ABORT = (RetryableModelError, ModelAuthError)
MAX_ABORTS = 3
"""Aborted compressions in a row (summary model unreachable) before automatic compression stops."""


@dataclass(frozen=True, slots=True)
class _Summary:
    body: str
    fallback: bool


class Compressor:
    """Runs the compressions of one session and keeps their state."""

    def __init__(self, settings: CompressionSettings, *, telemetry: Telemetry = NO_TELEMETRY) -> None:
        self.settings = settings
        self._telemetry = telemetry
        self.reset()

    def reset(self) -> None:
        """Forget every compression (construction, and a new conversation)."""
        self.compressions = 0
        """Compressions that replaced the middle (skips and aborts not counted)."""
        self.previous_summary: str | None = None
        self.ineffective = 0
        """Compressions in a row that ran but left the prompt over the threshold."""
        self.aborts = 0
        """Compressions in a row abandoned because the summary model was unreachable."""
        self.blocked = False
        """Automatic compression is off for this session (anti-thrash or repeated aborts)."""
        self._retry_at_turn = 0
        self._skipped_at: tuple[str, int] | None = None
        self._flushed = False
        """A flush ran and no compression has completed since: retries do not flush again."""

    async def maybe_compress(self, host: CompressionHost, emit: Emit) -> None:
        """Compress if the next prompt reaches the threshold and nothing holds compression back."""
        s = self.settings
        if not s.enabled or self.blocked or host.turn < self._retry_at_turn:
            return
        if host.prompt_estimate() < s.threshold_tokens:
            return
        if self._skipped_at == (host.session_id, len(host.messages)):
            return  # nothing new since the last "nothing to compress" skip
        base = host.base_estimate()
        if base >= s.threshold_tokens:
            self.blocked = True
            await emit(
                Warning(
                    f"the system prompt and tools alone (~{base:,} tokens) are over the compression threshold "
                    f"({s.threshold_tokens:,}): no compression can help, so automatic compression is off for this "
                    "session — use a model with a larger context window, or fewer tools and context files"
                )
            )
            return
        await self.compress(host, emit, manual=False, focus=None)

    async def compress(self, host: CompressionHost, emit: Emit, *, manual: bool, focus: str | None) -> None:
        """Run one compression of `host`, emitting progress events."""
        with self._telemetry.compression(manual=manual) as span:

            async def emit_and_trace(ev: Event) -> None:
                if isinstance(ev, CompressionFinished):
                    outcome = "aborted" if ev.aborted else "compressed" if ev.new_session_id else "skipped"
                    span.finished(
                        outcome=outcome, tokens_before=ev.tokens_before, tokens_after=ev.tokens_after
                    )
                await emit(ev)

            await self._compress(host, emit_and_trace, manual=manual, focus=focus)

    async def _compress(self, host: CompressionHost, emit: Emit, *, manual: bool, focus: str | None) -> None:
        if manual:
            self.blocked = False
            self.ineffective = 0
            self.aborts = 0
            self._retry_at_turn = 0
        s = self.settings
        await host.save()  # the stubs name the store ids of the rows they cut
        before = host.full_estimate()
        messages = list(host.messages)
        await emit(CompressionStarted(tokens_before=before, threshold=s.threshold_tokens, manual=manual))
        plan = plan_cut(
            messages,
            count=host.count,
            tail_budget=int(s.threshold_tokens * s.tail_ratio),
            protect_first_n=s.protect_first_n if self.compressions == 0 else 0,
            protect_last_n=s.protect_last_n,
        )
        head, middle, tail = (
            messages[: plan.head_end],
            messages[plan.head_end : plan.tail_start],
            messages[plan.tail_start :],
        )
        if plan.empty:
            await self._skip(host, emit, before, len(messages), "nothing to compress yet")
            return
        if sum(host.count(m) for m in middle) <= 2 * host.count(summary_message("")):
            # A summary message (its reference-only framing alone) would be as big as the
            # turns it replaces: compressing now would not shrink the prompt.
            await self._skip(host, emit, before, len(messages), "the compressible middle is too small yet")
            return

        # The protected head is never dropped, so no later flush would read it: the first
        # compression's flush reads it once, beside the middle ("nothing said at the start
        # forgotten"; a session that compresses once and ends keeps what it said first).
        # A checkpoint in the middle (the last compression's summary) is not read again: a
        # model wrote it from turns a flush has read, and its identifier list invites a
        # list of "facts" ("I use QuickBooks", a partner's tool, seen on facts_heldout3).
        unread = [m for m in ([*head, *middle] if self.compressions == 0 else middle) if not m.summary]
        await self._flush(host, emit, unread)
        summary = await self._summarize(host, middle, focus, emit)
        if summary is None:
            await self._aborted(host, emit, before, len(messages))
            return
        self.aborts = 0
        identifiers = extract_identifiers(middle) if s.identifier_index else []
        replacement = summary_message(
            summary.body, identifiers=identifiers, search_pointer=host.tool("session_search") is not None
        )
        new_transcript = repair_tool_pairs([*head, replacement, *tail])
        if sum(host.count(m) for m in new_transcript) >= sum(host.count(m) for m in messages):
            self.ineffective += 1
            await self._finish_unchanged(
                host,
                emit,
                before,
                len(messages),
                "the summary came out no smaller than the turns it would replace",
            )
            return

        await host.reload_memory()  # 3. a new frozen snapshot holding what the flush saved
        await host.continue_as_child(new_transcript)  # 4. lineage
        self.previous_summary = summary.body
        self.compressions += 1
        self._flushed = False
        after = host.full_estimate()
        self.ineffective = self.ineffective + 1 if after >= s.threshold_tokens else 0
        await self._check_thrash(emit)
        await emit(
            CompressionFinished(
                tokens_before=before,
                tokens_after=after,
                messages_before=len(messages),
                messages_after=len(new_transcript),
                summary_fallback=summary.fallback,
                aborted=False,
                new_session_id=host.session_id,
            )
        )

    # ------------------------------------------------------------------ steps

    def _flush_pieces(self, host: CompressionHost, unread: Sequence[Message]) -> list[Sequence[Message]]:
        """What the flush sends: the whole transcript in one request, or (with
        `flush_chunk_tokens`) the turns no flush has read (the dropped ones, and the head at
        the first compression), in short pieces."""
        budget = self.settings.flush_chunk_tokens
        if not budget:
            return [host.messages]
        return list(flush_pieces(unread, count=host.count, budget=budget))

    async def _flush(self, host: CompressionHost, emit: Emit, unread: Sequence[Message]) -> None:
        mode = self.settings.flush
        tool = host.tool(MEMORY_TOOL_NAME)
        if mode == "off" or tool is None or self._flushed:
            return  # off, no memory tool, or a retry after an abort (its facts are saved already)
        shape = flush_shape(mode, self.settings.flush_reply)
        started = time.monotonic()
        entries: list[FlushEntry] = []

        system = flush_system(
            mode, in_pieces=bool(self.settings.flush_chunk_tokens), session_system=host.system_prompt
        )

        def request_for(piece: Sequence[Message]) -> ModelRequest:
            return build_flush_request(
                system=system,
                messages=piece,
                tools=host.tool_specs(),
                mode=mode,
                reply=self.settings.flush_reply,
                max_tokens=self.settings.flush_max_tokens,
                stable_prefix_chars=len(system),
            )

        async def on_piece(outcome: FlushOutcome, usage: UsageReported) -> None:
            self._flushed = True
            await emit(usage)
            for ev in outcome.events:
                await emit(ev)
            entries.extend(outcome.entries)

        run = await flush_each_piece(
            host,
            self._flush_pieces(host, unread),
            request_for=request_for,
            shape=shape,
            tool=tool,
            mode=mode,
            on_piece=on_piece,
            span=lambda piece: self._telemetry.step("flush", piece=piece),
        )
        if run.error is not None:
            exc = run.error
            saved = "; what earlier pieces saved is kept" if run.outcomes else ""
            await emit(
                Warning(
                    f"memory flush failed ({type(exc).__name__}: {exc}); compressing without "
                    f"the rest of it{saved}"
                )
            )
        if run.outcomes:
            await emit(
                FlushCompleted(mode=mode, entries=tuple(entries), latency_s=time.monotonic() - started)
            )

    async def _summarize(
        self, host: CompressionHost, middle: Sequence[Message], focus: str | None, emit: Emit
    ) -> _Summary | None:
        """The summary, or None when the compression must abort."""
        provider_context = await host.pre_compress(middle)
        prompt = summary_prompt(
            serialize_turns(stub_bulky_tool_outputs(middle)),
            date=host.today().isoformat(),
            target_tokens=summary_target_tokens(
                sum(host.count(m) for m in middle), self.settings.context_window
            ),
            previous_summary=self.previous_summary,
            provider_context=provider_context,
            focus=focus,
        )
        request = ModelRequest(
            system="",
            messages=(Message(role="user", content=prompt),),
            purpose="summary",
            max_tokens=None,
            temperature=self.settings.summary_temperature,
        )
        try:
            with self._telemetry.step("summary"):
                reply, usage = await host.call(request, summary=True)
        except _ABORT as exc:
            await emit(
                Warning(
                    f"compression aborted: the summary model is unreachable ({type(exc).__name__}: {exc}); "
                    "no messages were dropped"
                )
            )
            return None
        except ModelError as exc:
            await emit(
                Warning(f"summary failed ({type(exc).__name__}: {exc}); used a mechanical fallback summary")
            )
            return _Summary(fallback_summary(middle, previous_summary=self.previous_summary), True)
        await emit(usage)
        body = reply.message.content.strip()
        if not body:
            await emit(Warning("the summary model returned nothing; used a mechanical fallback summary"))
            return _Summary(fallback_summary(middle, previous_summary=self.previous_summary), True)
        return _Summary(body, False)

    # ------------------------------------------------------------------ outcomes

    async def _skip(self, host: CompressionHost, emit: Emit, before: int, n: int, why: str) -> None:
        # A skip ran nothing: it does not count toward anti-thrash, but it is not retried
        # automatically until the transcript has grown.
        self._skipped_at = (host.session_id, len(host.messages))
        await self._finish_unchanged(host, emit, before, n, why)

    async def _aborted(self, host: CompressionHost, emit: Emit, before: int, n: int) -> None:
        self.aborts += 1
        if self.aborts >= MAX_ABORTS:
            self.blocked = True
            await emit(
                Warning(
                    f"{self.aborts} compressions in a row could not reach the summary model; automatic "
                    "compression is off for this session — run /compress once the model answers again"
                )
            )
        else:
            # Back off: the next automatic attempt waits 1, then 2 turns (each attempt costs
            # a summary call and its retries).
            self._retry_at_turn = host.turn + 2 ** (self.aborts - 1)
            await emit(
                Warning(
                    f"automatic compression will be retried from turn {self._retry_at_turn}, or run /compress"
                )
            )
        await emit(_unchanged(before, n, aborted=True))

    async def _finish_unchanged(
        self, host: CompressionHost, emit: Emit, before: int, n: int, why: str
    ) -> None:
        await emit(Warning(f"compression skipped: {why}"))
        await self._check_thrash(emit)
        await emit(_unchanged(before, n, aborted=False))

    async def _check_thrash(self, emit: Emit) -> None:
        if self.ineffective >= 2 and not self.blocked:
            self.blocked = True
            await emit(
                Warning(
                    "two compressions in a row left the prompt over the threshold (the system prompt and "
                    "tools alone may be too big for this context window); automatic compression is off for "
                    "this session — start a new session, or run /compress by hand"
                )
            )


def _unchanged(before: int, n: int, *, aborted: bool) -> CompressionFinished:
    """The end of a compression that left the conversation as it was (`before` tokens, `n` messages)."""
    return CompressionFinished(
        tokens_before=before,
        tokens_after=before,
        messages_before=n,
        messages_after=n,
        summary_fallback=False,
        aborted=aborted,
        new_session_id=None,
    )
