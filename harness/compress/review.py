"""The periodic memory review: one memory-only call every few turns, with no compression.

The design Hermes Agent moved to instead of a flush at compression time: every
`compression.review_interval` user turns the session asks the model once, off the turn's hot
path, which durable facts of the conversation its memory does not hold yet. The request is a
flush request in all but its note (`prompts/text/memory_review.md`): the frozen system
prompt, the transcript, only the memory tool, the session's flush reply form; the reply is
read and executed exactly like a flush reply (same checks, same memory tool), and logged as
a flush record. Nothing enters the transcript.
"""

from __future__ import annotations

from harness.compress.flush import FlushOutcome, build_flush_shape_request, execute_flush_reply, flush_shape
from harness.compress.host import CompressionHost, CompressionSettings
from harness.errors import ModelError
from memory import MEMORY_TOOL_NAME
from prompts import load_text

__all__ = ["review_memory"]


async def review_memory(host: CompressionHost, settings: CompressionSettings) -> FlushOutcome | None:
    """Run one memory review; None when there is no memory tool, no conversation, or the
    call failed (a review is best effort: the next one, or the flush, catches up).
    """
    tool = host.tool(MEMORY_TOOL_NAME)
    if tool is None or not host.messages:
        return None
    shape = flush_shape("memory_only", settings.flush_reply)
    request = build_flush_shape_request(
        shape,
        system=host.system_prompt,
        messages=host.messages,
        tools=[t for t in host.tool_specs() if t.name == MEMORY_TOOL_NAME],
        max_tokens=settings.flush_max_tokens,
        stable_prefix_chars=len(host.system_prompt),
        note=load_text("memory_review"),
    )
    with host.flushing():
        try:
            reply, _usage = await host.call(request)
        except ModelError:
            return None
        outcome = await execute_flush_reply(reply, request, shape=shape, memory_tool=tool)
    await host.record_flush(mode="memory_only", entries=outcome.entries, reply_text=outcome.reply_text)
    return outcome
