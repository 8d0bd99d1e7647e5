"""The periodic memory review: a memory-only call every few turns, with no compression.

The design Hermes Agent moved to instead of a flush at compression time: every
`compression.review_interval` user turns the session asks the model, off the turn's hot
path, which durable facts of the conversation its memory does not hold yet. The request is a
flush request in all but its note (`prompts/text/memory_review.md`): the frozen system
prompt, the turns under review, only the memory tool, the session's flush reply form; the
reply is read and executed exactly like a flush reply (same checks, same memory tool), and
logged as a flush record. Nothing enters the transcript.

A review covers the turns since the previous one (the last `turns` user turns), not the
whole transcript: each turn is reviewed once, and a small model reads a short stretch
better than a long one. With `compression.flush_chunk_tokens` set, those turns go in pieces
of at most that many tokens, one request each, as the flush's do.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.compress.flush import (
    FlushOutcome,
    build_flush_shape_request,
    flush_pieces,
    flush_shape,
    flush_system,
)
from harness.compress.host import CompressionHost, CompressionSettings
from harness.compress.pieces import flush_each_piece
from harness.types import Message, ModelRequest
from memory import MEMORY_TOOL_NAME
from prompts import load_text

__all__ = ["recent_turns", "review_memory"]


def recent_turns(messages: Sequence[Message], turns: int) -> Sequence[Message]:
    """The messages from the `turns`-th last user message on (all of them for 0, or when
    there are fewer user turns)."""
    if turns <= 0:
        return messages
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user" and not messages[i].summary:
            seen += 1
            if seen == turns:
                return messages[i:]
    return messages


async def review_memory(
    host: CompressionHost, settings: CompressionSettings, *, turns: int = 0
) -> FlushOutcome | None:
    """Run one memory review of the last `turns` user turns (0: the whole transcript).

    Returns the combined outcome of its requests; None when there is no memory tool, nothing
    to review, or the first call failed (a review is best effort: the next one, or the flush,
    catches up; a later piece that fails keeps what earlier pieces saved).
    """
    tool = host.tool(MEMORY_TOOL_NAME)
    # a checkpoint is a model's words about turns already read, not the user's (as in the flush)
    stretch = [m for m in recent_turns(host.messages, turns) if not m.summary]
    if tool is None or not stretch:
        return None
    budget = settings.flush_chunk_tokens
    pieces = flush_pieces(stretch, count=host.count, budget=budget) if budget else [tuple(stretch)]
    shape = flush_shape("memory_only", settings.flush_reply)
    tools = [t for t in host.tool_specs() if t.name == MEMORY_TOOL_NAME]

    system = flush_system("memory_only", in_pieces=bool(budget), session_system=host.system_prompt)

    def request_for(piece: Sequence[Message]) -> ModelRequest:
        return build_flush_shape_request(
            shape,
            system=system,
            messages=piece,
            tools=tools,
            max_tokens=settings.flush_max_tokens,
            stable_prefix_chars=len(system),
            note=load_text("memory_review"),
        )

    run = await flush_each_piece(
        host, pieces, request_for=request_for, shape=shape, tool=tool, mode="memory_only", via="review"
    )
    outcomes = run.outcomes
    if not outcomes:
        return None
    return FlushOutcome(
        tuple(e for o in outcomes for e in o.entries),
        tuple(ev for o in outcomes for ev in o.events),
        "\n\n".join(o.reply_text for o in outcomes),
    )
