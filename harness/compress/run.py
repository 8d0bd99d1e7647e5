"""Compression with the memory flush — the order is the specification (design.md §5):

1. **Flush**: one model call over the transcript plus the flush note; only `memory` calls
   run, directly against the store; the note and the reply never enter the transcript
   (they are logged as a flush record).
2. **Summarize the middle**: plan the cut, stub bulky tool outputs, ask providers for
   `on_pre_compress` text, one call to the summary model. Network, auth and overload
   errors abort with the transcript unchanged; any other failure inserts a deterministic
   fallback summary and warns.
3. **Reload and rebuild**: `load()` the curated store (a new frozen snapshot that now
   holds what the flush saved) and rebuild the system prompt.
4. **Lineage**: end the session row with reason `compression`, continue in a child
   session whose parent is the old one; providers hear about the switch.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from harness.compress.flush import build_flush_request, execute_flush_reply
from harness.compress.plan import (
    fallback_summary,
    plan_cut,
    repair_tool_pairs,
    serialize_turns,
    stub_bulky_tool_outputs,
    summary_message,
    summary_prompt,
    summary_target_tokens,
)
from harness.errors import (
    ModelAuthError,
    ModelError,
    RetryableModelError,
)
from harness.events import (
    CompressionFinished,
    CompressionStarted,
    Event,
    FlushCompleted,
    Warning,
)
from harness.loop.session import Session
from harness.types import Message, ModelRequest

__all__ = ["compress_session"]

Emit = Callable[[Event], Awaitable[None]]

# Failures that say "try later", not "the summarizer is broken": dropping turns without a
# real summary would lose them, so the compression is abandoned instead.
_ABORT = (RetryableModelError, ModelAuthError)


async def _flush(session: Session, emit: Emit) -> None:
    mode = session.config.compression.flush
    tool = session.tools.get("memory")
    if mode == "off" or tool is None:
        return
    request = build_flush_request(
        system=session.prompt.text,
        messages=session.transcript,
        tools=session.tools.specs(),
        mode=mode,
        max_tokens=session.config.model.max_output_tokens,
        stable_prefix_chars=len(session.prompt.text),
    )
    started = time.monotonic()
    try:
        reply, usage = await session.send_request(request, slots=session.trace_slots())
    except ModelError as exc:
        await emit(Warning(f"memory flush failed ({type(exc).__name__}: {exc}); compressing without it"))
        return
    await emit(usage)
    outcome = await execute_flush_reply(reply, memory_tool=tool)
    entries = outcome.entries
    await session.recorder.record_flush(
        session.session_id, mode=mode, entries=entries, reply_text=outcome.reply_text
    )
    for ev in outcome.events:
        await emit(ev)
    await emit(FlushCompleted(mode=mode, entries=tuple(entries), latency_s=time.monotonic() - started))


async def _summarize(
    session: Session, middle: list[Message], focus: str | None, emit: Emit
) -> tuple[str, bool] | None:
    """The summary body and whether it is the fallback; None means abort."""
    cfg = session.config
    provider_context = await session.providers.on_pre_compress(middle)
    middle_tokens = sum(session.count_message(m) for m in middle)
    prompt = summary_prompt(
        serialize_turns(stub_bulky_tool_outputs(middle)),
        date=session.today().isoformat(),
        target_tokens=summary_target_tokens(middle_tokens, cfg.model.context_window),
        previous_summary=session.previous_summary,
        provider_context=provider_context,
        focus=focus,
    )
    request = ModelRequest(
        system="",
        messages=(Message(role="user", content=prompt),),
        purpose="summary",
        max_tokens=None,
    )
    try:
        reply, usage = await session.send_request(request, client=session.summary_model, slots=[])
    except _ABORT as exc:
        await emit(
            Warning(
                f"compression aborted: the summary model is unreachable ({type(exc).__name__}: {exc}); "
                "no messages were dropped — it will be retried later, or run /compress"
            )
        )
        return None
    except ModelError as exc:
        await emit(
            Warning(f"summary failed ({type(exc).__name__}: {exc}); used a mechanical fallback summary")
        )
        return fallback_summary(middle, previous_summary=session.previous_summary), True
    await emit(usage)
    body = reply.message.content.strip()
    if not body:
        await emit(Warning("the summary model returned nothing; used a mechanical fallback summary"))
        return fallback_summary(middle, previous_summary=session.previous_summary), True
    return body, False


async def compress_session(session: Session, emit: Emit, *, manual: bool, focus: str | None) -> None:
    """Run one compression of `session`, emitting progress events."""
    cfg = session.config.compression
    threshold = session.threshold_tokens
    before = session.full_estimate()
    messages = list(session.transcript)
    await emit(CompressionStarted(tokens_before=before, threshold=threshold, manual=manual))

    plan = plan_cut(
        messages,
        count=session.count_message,
        tail_budget=int(threshold * cfg.tail_ratio),
        protect_first_n=cfg.protect_first_n if session.compressions == 0 else 0,
        protect_last_n=cfg.protect_last_n,
    )
    if plan.empty:
        session.ineffective_compressions += 1
        await _finish_without_change(session, emit, before, len(messages), "nothing to compress yet")
        return
    middle_tokens = sum(session.count_message(m) for m in messages[plan.head_end : plan.tail_start])
    if middle_tokens <= 2 * session.count_message(summary_message("")):
        # A summary message (its reference-only framing alone) would be as big as the turns
        # it replaces: compressing now would not shrink the prompt.
        session.ineffective_compressions += 1
        await _finish_without_change(
            session, emit, before, len(messages), "the compressible middle is too small yet"
        )
        return

    await _flush(session, emit)

    head, middle, tail = (
        messages[: plan.head_end],
        messages[plan.head_end : plan.tail_start],
        messages[plan.tail_start :],
    )
    summarized = await _summarize(session, middle, focus, emit)
    if summarized is None:
        await emit(
            CompressionFinished(
                tokens_before=before,
                tokens_after=before,
                messages_before=len(messages),
                messages_after=len(messages),
                summary_fallback=False,
                aborted=True,
                new_session_id=None,
            )
        )
        return
    body, fallback = summarized
    new_transcript = repair_tool_pairs([*head, summary_message(body), *tail])
    if sum(session.count_message(m) for m in new_transcript) >= sum(
        session.count_message(m) for m in messages
    ):
        session.ineffective_compressions += 1
        await _finish_without_change(
            session,
            emit,
            before,
            len(messages),
            "the summary came out no smaller than the turns it would replace",
        )
        return

    # 3. reload the curated store (new frozen snapshot) and rebuild the prefix
    if session.memory is not None:
        await session.memory.load()
    await session.rebuild_prompt(refresh_static=True)

    # 4. lineage: the old session ends; a child continues with the compacted transcript
    old = session.session_id
    await session.continue_as_child(new_transcript, reason="compression")
    session.previous_summary = body
    session.compressions += 1
    await session.providers.on_session_switch(session.session_id, parent_session_id=old)

    after = session.full_estimate()
    if after >= threshold:
        session.ineffective_compressions += 1
    else:
        session.ineffective_compressions = 0
    await _check_thrash(session, emit)
    await emit(
        CompressionFinished(
            tokens_before=before,
            tokens_after=after,
            messages_before=len(messages),
            messages_after=len(new_transcript),
            summary_fallback=fallback,
            aborted=False,
            new_session_id=session.session_id,
        )
    )


async def _finish_without_change(session: Session, emit: Emit, before: int, n: int, why: str) -> None:
    await emit(Warning(f"compression skipped: {why}"))
    await _check_thrash(session, emit)
    await emit(
        CompressionFinished(
            tokens_before=before,
            tokens_after=before,
            messages_before=n,
            messages_after=n,
            summary_fallback=False,
            aborted=False,
            new_session_id=None,
        )
    )


async def _check_thrash(session: Session, emit: Emit) -> None:
    if session.ineffective_compressions >= 2 and not session.auto_compress_blocked:
        session.auto_compress_blocked = True
        await emit(
            Warning(
                "two compressions in a row left the prompt over the threshold (the system prompt and "
                "tools alone may be too big for this context window); automatic compression is off for "
                "this session — start a new session, or run /compress by hand"
            )
        )
