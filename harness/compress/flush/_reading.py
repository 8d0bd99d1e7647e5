"""How a flush reply becomes memory writes: one reading for every shape, never raising.

Tool calls to `memory` (one write or an `operations` list) and, for the `text_list` shape,
`user: …` / `memory: …` lines become `FlushWrite`s; every other thing the reply offers is a
`FlushRefusal` with its reason (not the memory tool, unreadable arguments, a line of another
form, or a candidate fact that fails `_entries.check_entry`). Writes are deduplicated. A
batch call cut off by the output cap keeps every operation written out before the cut (with
Qwen2.5-Coder-1.5B under a 288-token cap, the `forced` flush lost every fact of a session
that way); the unfinished rest is refused as cut off.

`claims_a_save` is the one check for a reply that *says* it saved something: small models
often confirm a save they never made, and nobody may read "saved" where nothing was.
Executing the writes (through the memory tool, so the scanner and the budget apply) is the
caller's job (`_execute.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import JsonValue

from harness.compress.flush._entries import (
    NO_SNAPSHOT,
    NOTHING,
    Instructions,
    Snapshot,
    accepted,
    check_entry,
)
from harness.compress.flush._request import FlushShape, flush_note
from harness.types import ModelReply
from memory import MEMORY_TOOL_NAME

__all__ = ["FlushReading", "FlushRefusal", "FlushWrite", "claims_a_save", "looping", "read_flush_reply"]

Target: TypeAlias = Literal["user", "memory"]

# First-person statements of having saved / remembered something. "Nothing to save." and
# negations do not count.
_CLAIM = re.compile(
    r"\b(?:I(?:'ve| have| will|'ll)?|has been|have been|were|was|are|is|successfully|now)\s+"
    r"(?:\w+\s+){0,2}?(?:saved|stored|remembered|noted|recorded|memorized|added|saving|storing)\b"
    r"|\b(?:saved|stored|added|recorded)\s+(?:to|in|into)\s+(?:your\s+|my\s+|the\s+)?(?:memory|notes|profile)\b"
    r"|\bmemory\s+(?:updated|saved)\b"
    r"|\bI(?:'ll| will)\s+(?:remember|note|keep in mind|save|store)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:nothing|not|no|never|don't|didn't|won't|cannot|can't)\b[^.!?\n]{0,40}$", re.I)
_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*(user|memory)\s*[:\-–]\s*(.+?)\s*$", re.I)


@dataclass(frozen=True, slots=True)
class FlushWrite:
    """One memory-tool write the flush asks for."""

    target: Target
    content: str
    action: Literal["add", "replace", "remove"] = "add"
    old_text: str | None = None

    @property
    def arguments(self) -> str:
        """The memory tool's JSON arguments for this write."""
        args: dict[str, JsonValue] = {"action": self.action, "target": self.target}
        if self.action != "remove":
            args["content"] = self.content
        if self.old_text is not None:
            args["old_text"] = self.old_text
        return json.dumps(args, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class FlushRefusal:
    """Something the reply offered that will not be written, and why."""

    text: str
    reason: str


@dataclass(frozen=True, slots=True)
class FlushReading:
    """What a flush reply amounts to."""

    writes: tuple[FlushWrite, ...]
    refusals: tuple[FlushRefusal, ...]
    claimed_without_call: bool
    reply_text: str


def claims_a_save(text: str) -> str | None:
    """The sentence of `text` that claims a save, or None."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        match = _CLAIM.search(sentence)
        if match is not None and not _NEGATED.search(sentence[: match.start()]):
            return sentence.strip()[:500]
    return None


_LOOP_LINES = 8
"""Lines a reply needs before it can be said to go round in a loop."""


def looping(text: str) -> bool:
    """The reply went round in a loop: many lines, hardly any of them new ("user: none" /
    "memory: none" until the output cap — Qwen2.5-Coder-1.5B on a piece that mixed three
    conversations and two scripts)."""
    lines = [" ".join(line.split()).lower() for line in text.splitlines() if line.strip()]
    return len(lines) >= _LOOP_LINES and len(set(lines)) * 4 <= len(lines)


def _target(raw: JsonValue) -> Target:
    return "user" if raw == "user" else "memory"


_OPERATIONS = re.compile(r'"operations"\s*:\s*\[')
_TARGET = re.compile(r'"target"\s*:\s*"(user|memory)"')
_CUT = "cut off before it was complete (the reply reached its output cap); the operations before it are kept"


def _complete_operations(arguments: str) -> tuple[dict[str, JsonValue], str] | None:
    """The arguments of a batch call that was cut off mid-way (a small model's list of facts
    reaching the output cap): its target and every operation written out in full before the
    cut, and the unfinished rest. None when not one operation is complete."""
    start = _OPERATIONS.search(arguments)
    if start is None:
        return None
    decoder = json.JSONDecoder()
    items: list[JsonValue] = []
    at = start.end()
    while True:
        while at < len(arguments) and arguments[at] in ", \t\r\n":
            at += 1
        try:
            item, at = decoder.raw_decode(arguments, at)
        except ValueError:
            break
        items.append(item)
    if not items:
        return None
    target = _TARGET.search(arguments)
    args: dict[str, JsonValue] = {"target": target.group(1) if target else "memory", "operations": items}
    return args, arguments[at:]


def _writes_from_call(
    arguments: str, note_words: Instructions, said: str | None, memory: Snapshot
) -> tuple[list[FlushWrite], list[FlushRefusal]]:
    cut: list[FlushRefusal] = []
    try:
        args: JsonValue = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        salvaged = _complete_operations(arguments)
        if salvaged is None:
            return [], [FlushRefusal(arguments[:500], "the memory call's arguments are not valid JSON")]
        args, rest = salvaged
        cut.append(FlushRefusal(rest.strip()[:500], _CUT))
    if not isinstance(args, dict):
        return [], [FlushRefusal(arguments[:500], "the memory call's arguments are not a JSON object")]
    target = _target(args.get("target"))
    ops = args.get("operations")
    items: list[JsonValue] = list(ops) if isinstance(ops, list) else [args]
    writes: list[FlushWrite] = []
    refusals: list[FlushRefusal] = []
    for item in items:
        if not isinstance(item, dict):
            refusals.append(FlushRefusal(json.dumps(item)[:500], "an operation is not an object"))
            continue
        action = item.get("action", "add")
        content, old = item.get("content"), item.get("old_text")
        if action not in ("add", "replace", "remove"):
            refusals.append(
                FlushRefusal(json.dumps(item)[:500], f"unknown action {action!r}; use add, replace or remove")
            )
            continue
        if action == "remove":
            if isinstance(old, str) and old.strip():
                writes.append(FlushWrite(target, "", "remove", old))
            else:
                refusals.append(
                    FlushRefusal(
                        json.dumps(item)[:500], "remove without old_text (the entry's text to remove)"
                    )
                )
            continue
        text = content if isinstance(content, str) else ""
        if action == "replace":
            problem = check_entry(text, note_words, said, memory)
            if problem is None and not (isinstance(old, str) and old.strip()):
                problem = "replace without old_text (the entry's text to replace)"
            kept = [text.strip()]
        else:
            kept, problem = accepted(text, note_words, said, memory)
        if problem is not None:
            refusals.append(FlushRefusal(text[:500] or json.dumps(item)[:500], problem))
            continue
        if action == "replace":
            writes.append(FlushWrite(target, text.strip(), "replace", old if isinstance(old, str) else None))
        else:
            writes += [FlushWrite(target, k) for k in kept]
    return writes, refusals + cut


def _from_lines(
    text: str, note_words: Instructions, said: str | None, memory: Snapshot
) -> tuple[list[FlushWrite], list[FlushRefusal]]:
    writes: list[FlushWrite] = []
    refusals: list[FlushRefusal] = []
    for line in text.splitlines():
        if not line.strip() or NOTHING.match(line):
            continue
        m = _LINE.match(line)
        if m is None:
            refusals.append(FlushRefusal(line.strip()[:500], "not a 'user: …' or 'memory: …' line"))
            continue
        content = m.group(2).strip()
        if NOTHING.match(content):
            continue
        kept, problem = accepted(content, note_words, said, memory)
        if problem is not None:
            refusals.append(FlushRefusal(content[:500], problem))
            continue
        writes += [FlushWrite(_target(m.group(1).lower()), k) for k in kept]
    return writes, refusals


def _dedupe(writes: list[FlushWrite]) -> tuple[FlushWrite, ...]:
    seen: set[tuple[str, str, str]] = set()
    out: list[FlushWrite] = []
    for w in writes:
        key = (w.target, w.action, " ".join(w.content.lower().split()))
        if key not in seen:
            seen.add(key)
            out.append(w)
    return tuple(out)


def read_flush_reply(
    shape: FlushShape,
    reply: ModelReply,
    *,
    instructions: Sequence[str] = (),
    said: str | None = None,
    memory: str = "",
) -> FlushReading:
    """The writes and refusals in a reply to a `shape` flush request (never raises).

    Args:
        shape: the shape the request was built with.
        reply: the model's reply.
        instructions: what else the model was told — pass the request's system prompt and
            tool descriptions: entries that merely echo them (or the flush note) are refused.
        said: the text the facts must come from (the flushed conversation); an entry not
            `memory.grounded` in it is refused. None: not checked.
        memory: the memory snapshot the model was shown (pass it apart from the system
            prompt, and the system prompt without it): an entry one of its entries already
            says is refused as "already in memory", not as an echo of the instructions.
    """
    snapshot = Snapshot.of(memory) if memory.strip() else NO_SNAPSHOT
    if memory.strip():
        instructions = [i.replace(memory, "") for i in instructions]
    note_words = Instructions.of([flush_note(shape), *instructions])
    writes: list[FlushWrite] = []
    refusals: list[FlushRefusal] = []
    for call in reply.message.tool_calls:
        if call.name != MEMORY_TOOL_NAME:
            refusals.append(
                FlushRefusal(
                    f"{call.name}({call.arguments[:400]})",
                    "not available during flush: only the memory tool runs",
                )
            )
            continue
        w, r = _writes_from_call(call.arguments, note_words, said, snapshot)
        writes += w
        refusals += r
    text = reply.message.content
    if shape == "text_list":
        w, r = _from_lines(text, note_words, said, snapshot)
        writes += w
        refusals += r
    claimed = not writes and claims_a_save(text) is not None
    return FlushReading(_dedupe(writes), tuple(refusals), claimed, text)
