"""The flush in pieces: what a compression is about to drop, cut into short requests.

One flush request over a long transcript asks a small model to find a handful of durable
facts in thousands of tokens of mixed conversation; measured on Qwen2.5-Coder-1.5B
(`benchmarks/retention_locomo.py --facts`), it writes one line at most and the facts die
with the summary. With `compression.flush_chunk_tokens` set, the flush instead covers only
the messages the compression replaces (the kept head and tail stay visible and are flushed
when they are dropped in turn), in consecutive pieces of at most that many tokens, each
sent as a request of its own: the note-taker system prompt (`_request.flush_system`), the
memory tool, the piece, the note.

Pieces start at a user message (a turn is never split, so a tool call stays with its
result); a single turn over the budget is a piece of its own. `halves` cuts a piece in two
the same way, for a piece whose reply went round in a loop (`_reading.looping`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.types import Message

__all__ = ["flush_pieces", "halves"]


def _turns(messages: Sequence[Message]) -> list[list[Message]]:
    turns: list[list[Message]] = []
    for m in messages:
        if not turns or m.role == "user":
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


def flush_pieces(
    messages: Sequence[Message], *, count: Callable[[Message], int], budget: int
) -> list[tuple[Message, ...]]:
    """`messages` as consecutive pieces of whole turns, each at most `budget` tokens where a
    turn fits (an oversized turn is a piece alone). Empty input gives no pieces.

    Raises:
        ValueError: `budget` is not positive.
    """
    if budget <= 0:
        raise ValueError(f"a flush piece needs a positive token budget, got {budget}")
    pieces: list[tuple[Message, ...]] = []
    current: list[Message] = []
    used = 0
    for turn in _turns(messages):
        size = sum(count(m) for m in turn)
        if current and used + size > budget:
            pieces.append(tuple(current))
            current, used = [], 0
        current.extend(turn)
        used += size
    if current:
        pieces.append(tuple(current))
    return pieces


def halves(piece: Sequence[Message]) -> list[tuple[Message, ...]]:
    """`piece` as two pieces of whole turns (the first gets the smaller half), or as itself
    when it is one turn."""
    turns = _turns(piece)
    if len(turns) < 2:
        return [tuple(piece)]
    mid = len(turns) // 2
    return [tuple(m for t in turns[:mid] for m in t), tuple(m for t in turns[mid:] for m in t)]
