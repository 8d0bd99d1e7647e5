"""Running a flush reply: its writes go through the memory tool; the rest is recorded.

A synthetic user note is appended to a *copy* of the transcript and sent once
(`_request.py`). Only memory writes in the reply are executed, directly against the store
through the memory tool (so the scanner and the budget apply); there is no second model
turn, and the live transcript never sees the note or the reply.

No pretend saves: a reply whose text says it saved something while no memory write landed
is recorded as a refused `claimed` entry with that reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from harness.compress.flush._reading import claims_a_save, read_flush_reply
from harness.compress.flush._request import FlushShape
from harness.events import Event, FlushEntry, MemoryWritten
from harness.tools import Tool, ToolOutput
from harness.types import Message, ModelReply, ModelRequest
from memory.grounding import content_stems

__all__ = ["CLAIMED_SAVE_REASON", "FlushOutcome", "execute_flush_reply", "grounds_of"]

CLAIMED_SAVE_REASON = "the reply says it saved this, but made no valid memory call: nothing was saved"


@dataclass(frozen=True, slots=True)
class FlushOutcome:
    """What one flush reply did: an entry per attempted (or claimed) save, and the events."""

    entries: tuple[FlushEntry, ...]
    events: tuple[Event, ...]
    reply_text: str

    @property
    def saved(self) -> tuple[FlushEntry, ...]:
        return tuple(e for e in self.entries if e.saved)


def _theirs(m: Message) -> bool:
    """A message of the user's or a tool's — not a compression checkpoint, which a model
    wrote (its identifier list names every tool anyone mentioned, the partner's too)."""
    return m.role in ("user", "tool") and not m.summary


def _said(conversation: Sequence[Message]) -> str:
    """What a fact may rest on: the user's words and the tools' results, never the
    assistant's (its advice is not the user's practice, its guesses not their facts) nor a
    checkpoint's."""
    return "\n".join(m.content for m in conversation if _theirs(m))


_GROUNDS = 160
"""Characters of the message an entry rests on that its record keeps."""


def grounds_of(content: str, conversation: Sequence[Message]) -> str:
    """The user's or a tool's message `content` rests on most (the most of its content
    words), cut to `_GROUNDS` characters; "" when none shares a word with it."""
    stems = content_stems(content)
    best, shared = "", 0
    for m in conversation:
        if _theirs(m) and (n := len(stems & content_stems(m.content))) > shared:
            best, shared = m.content, n
    flat = " ".join(best.split())
    return flat if len(flat) <= _GROUNDS else flat[: _GROUNDS - 1] + "…"


def _entries_from(
    call_args: str, out: ToolOutput, *, via: str, conversation: Sequence[Message]
) -> list[FlushEntry]:
    written = [e for e in out.events if isinstance(e, MemoryWritten)]
    if written:
        return [
            FlushEntry(
                target=e.target,
                action=e.action,
                content=e.content,
                saved=True,
                via=via,
                grounded_on=grounds_of(e.content, conversation),
            )
            for e in written
        ]
    return [
        FlushEntry(target="?", action="?", content=call_args[:500], saved=False, reason=_tool_reason(out))
    ]


def _tool_reason(out: ToolOutput) -> str:
    """What the memory tool said when it wrote nothing, as a sentence ("That entry already
    exists in USER.md; nothing was added."), not its JSON."""
    try:
        reply = json.loads(out.content)
    except ValueError:
        return out.content[:500]
    said = reply.get("message") or reply.get("error") if isinstance(reply, dict) else None
    return str(said)[:500] if said else out.content[:500]


async def execute_flush_reply(
    reply: ModelReply,
    request: ModelRequest,
    *,
    shape: FlushShape,
    memory_tool: Tool | None,
    memory: str = "",
    via: str = "flush",
) -> FlushOutcome:
    """Turn the flush reply into memory writes (through the memory tool); record the rest.

    Every write the reply asks for runs through `memory_tool` (so the scanner and the budget
    apply); whatever is not a write is a refused entry with its reason; a reply that says it
    saved something while nothing landed is a refused `claimed` entry. `memory`: the memory
    snapshot (see `read_flush_reply`); `via`: what is asking (`flush` or `review`), kept on
    each saved entry with the message it rests on (`grounds_of`), so `keel memory list --why`
    can say why keel believes it.
    """
    # The last message is the note (the flush's or the review's): instructions, not the
    # conversation — an entry copied from it is an echo, never "said".
    *conversation, note = request.messages
    reading = read_flush_reply(
        shape,
        reply,
        instructions=[request.system, note.content, *(t.description for t in request.tools)],
        said=_said(conversation),
        memory=memory,
    )
    entries = [
        FlushEntry(target="-", action="refused", content=r.text[:500], saved=False, reason=r.reason)
        for r in reading.refusals
    ]
    events: list[Event] = []
    for write in reading.writes:
        if memory_tool is None:
            entries.append(
                FlushEntry(
                    write.target,
                    write.action,
                    write.content,
                    saved=False,
                    reason="no memory tool in this session (memory is off, or it is a subagent or cron session)",
                )
            )
            continue
        out = await memory_tool(write.arguments)
        events.extend(out.events)
        entries.extend(_entries_from(write.arguments, out, via=via, conversation=conversation))
    text = reply.message.content
    if not any(e.saved for e in entries):
        claim = claims_a_save(text)
        if claim is not None:
            entries.append(
                FlushEntry(
                    target="?", action="claimed", content=claim, saved=False, reason=CLAIMED_SAVE_REASON
                )
            )
    return FlushOutcome(tuple(entries), tuple(events), text)
