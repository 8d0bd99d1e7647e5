"""The one head-and-tail cutter for tool text, and the two caps that use it.

A long tool output loses its middle: the head (three quarters of what is kept) and the tail
(the rest) stay, with a marker between them saying what went. Two limits apply it:

- `cap_text`: the output cap of one tool (`limits.tool_output_chars`, a tool's own
  `max_output_chars`): what the tool hands back at all, and what the session stores;
- `capped_result`: the transcript's cap (`limits.tool_result_chars`): what the model keeps
  in its context, pointing at the stored output so it can read on.

Both are deterministic, so a capped text replays byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["cap_text", "capped_result", "cut_middle"]


def cut_middle(text: str, keep: int, marker: Callable[[int, int], str]) -> str:
    """`text` with all but `keep` of its characters cut from the middle.

    The first three quarters of `keep` come from the head and the rest from the tail;
    `marker(head, tail)` (the lengths kept) is put where the cut was.
    """
    head = keep * 3 // 4
    tail = keep - head
    return f"{text[:head]}{marker(head, tail)}{text[len(text) - tail :] if tail else ''}"


def cap_text(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters (head and tail kept), with a marker saying how much went."""
    if len(text) <= limit:
        return text
    total = len(text)

    def marker(head: int, tail: int) -> str:
        return f"\n[... {total - head - tail:,} characters cut; the tool returned {total:,} ...]\n"

    return cut_middle(text, limit, marker)


def capped_result(text: str, cap: int, *, message_id: int | None) -> str:
    """A tool result cut to at most `cap` characters for the transcript: head, marker, tail.

    The marker says how much was cut and, when the full output is in the session store
    (`message_id`), how to read on: `session_search` with that `message_id` and the offset
    where the cut begins.
    """
    if len(text) <= cap:
        return text
    total = f"{len(text):,}"
    where = (
        f"the full output is stored as message {message_id}: session_search with "
        f"message_id={message_id} and offset={{at}} reads on from here"
        if message_id is not None
        else "the cut part cannot be read back"
    )
    # Sized for the longest marker this text can get, so head + marker + tail fits `cap`.
    probe = f"\n[... {total} of {total} characters cut; {where.format(at=len(text))} ...]\n"

    def marker(head: int, tail: int) -> str:
        return f"\n[... {len(text) - head - tail:,} of {total} characters cut; {where.format(at=head)} ...]\n"

    return cut_middle(text, max(0, cap - len(probe)), marker)
