"""The shapes a flush request can take, and how each shape's reply becomes memory writes.

The flush is one model call whose only effect is memory writes. What varies is how the
request asks for them; `benchmarks/local_flush.py` measures each shape on real models:

- `free_calls`: the classic note (`flush.md`), `tool_choice: auto` — the model may call the
  memory tool as often as it likes, or not at all.
- `forced_call`: `tool_choice` names the memory tool, so the reply is exactly one memory
  call (one fact per flush at most).
- `forced_batch`: the same forced call, but the note (`flush_batch.md`) asks for every fact
  in one call as an `operations` list of adds.
- `text_list`: `tool_choice: none` and a note (`flush_list.md`) asking for plain lines
  `user: <fact>` / `memory: <fact>`; lines of any other form are refused.

Every shape leaves `system` and `tools` exactly as the caller gives them (pass the session's
unchanged tool list and the flush reuses the conversation's cached prefix; pass only the
memory tool for the classic `memory_only` flush): only the final note and `tool_choice`
differ. Both functions are pure; executing the writes (through the memory tool, so the
scanner and the budget apply) is the caller's job.

Measured (`benchmarks/local_flush.py`, 12 conversations, 61 planted facts): on
Qwen2.5-Coder-1.5B `text_list` keeps 84% of the facts, `forced_batch` 51%, `forced_call` 44%,
`free_calls` 16%; the smaller models keep at most 11% (0.5B) and 2% (SmolLM2) with any shape.
`text_list` is the shape to use: call `build_flush_shape_request("text_list", ...)` with the
session's unchanged tool list and a `max_tokens` of its own (at least 256: a reply lists
several facts), then `read_flush_reply("text_list", reply, instructions=[request.system,
*(t.description for t in request.tools)])`, and run each `FlushWrite.arguments` through the
memory tool.

`read_flush_reply` never raises. Each candidate fact ends up as a `FlushWrite` or as a
`FlushRefusal` with its reason (not the memory tool, unreadable arguments, an empty entry,
a line that restates the instruction, ...). When the reply *says* it saved something but
produced no write, `claimed_without_call` is set — small models often confirm a save they
never made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import JsonValue

from harness.types import Message, ModelReply, ModelRequest, ToolChoice, ToolSpec
from memory.grounding import content_words, grounded
from prompts import load_text

__all__ = [
    "FLUSH_SHAPES",
    "FlushReading",
    "FlushRefusal",
    "FlushShape",
    "FlushWrite",
    "build_flush_shape_request",
    "read_flush_reply",
]

FlushShape: TypeAlias = Literal["free_calls", "forced_call", "forced_batch", "text_list"]
FLUSH_SHAPES: tuple[FlushShape, ...] = ("free_calls", "forced_call", "forced_batch", "text_list")

MEMORY_TOOL = "memory"
Target: TypeAlias = Literal["user", "memory"]

_NOTES: dict[FlushShape, str] = {
    "free_calls": "flush",
    "forced_call": "flush_forced",
    "forced_batch": "flush_batch",
    "text_list": "flush_list",
}
_CHOICE: dict[FlushShape, ToolChoice] = {
    "free_calls": "auto",
    "forced_call": MEMORY_TOOL,
    "forced_batch": MEMORY_TOOL,
    "text_list": "none",
}
_MAX_ENTRY = 300
# Most of a flushed fact's content words must have been said, as the semantic provider asks
# of a fact from one exchange; the words a flush entry uses to say what kind of fact it is
# (the categories the flush note asks for: "Name: Sam", "Preferences: uses vim") are not
# counted, since the conversation rarely uses them.
GROUNDING_SHARE = 0.6
FACT_LABELS = frozenset(
    [
        "name",
        "names",
        "named",
        "role",
        "roles",
        "preference",
        "preferences",
        "prefers",
        "correction",
        "corrections",
        "environment",
        "tool",
        "tools",
        "project",
        "projects",
        "convention",
        "conventions",
        "detail",
        "details",
    ]
)
"""Longer 'facts' are a paragraph copied from the conversation, not a memory entry."""


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


def build_flush_shape_request(
    shape: FlushShape,
    *,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    max_tokens: int | None,
    stable_prefix_chars: int | None = None,
) -> ModelRequest:
    """The one flush request of `shape`: `system` and `tools` unchanged, the shape's note last.

    A shape that needs the memory tool (all but `text_list`) falls back to `tool_choice:
    none` when `tools` lacks it, so the request stays valid; its reply then holds no writes.
    """
    choice = _CHOICE[shape]
    if choice == MEMORY_TOOL and not any(t.name == MEMORY_TOOL for t in tools):
        choice = "none"
    return ModelRequest(
        system=system,
        messages=(*messages, Message(role="user", content=load_text(_NOTES[shape]))),
        tools=tuple(tools),
        tool_choice=choice if tools else "auto",
        max_tokens=max_tokens,
        temperature=0.0,
        purpose="flush",
        stable_prefix_chars=stable_prefix_chars,
    )


_CLAIM = re.compile(
    r"\b(i(?:'ve| have)? (?:saved|stored|noted|remembered|added|recorded)|saved (?:to|in) (?:your |my )?memory"
    r"|(?:i'll|i will) remember|has been (?:saved|stored|noted|added))\b",
    re.I,
)
_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*(user|memory)\s*[:\-–]\s*(.+?)\s*$", re.I)
_NOTHING = re.compile(r"^\s*(?:none|nothing(?: to save)?|no durable facts?)[.!]?\s*$", re.I)
_WORD = re.compile(r"[a-z0-9']+")


_RUN = 7
"""A run of this many words copied from the instructions marks an entry as an echo."""


@dataclass(frozen=True, slots=True)
class _Instructions:
    """The words of what the model was told (system prompt, tool descriptions, the note)."""

    words: frozenset[str]
    runs: frozenset[tuple[str, ...]]

    @classmethod
    def of(cls, texts: Sequence[str]) -> _Instructions:
        words: set[str] = set()
        runs: set[tuple[str, ...]] = set()
        for text in texts:
            seq = _WORD.findall(text.lower())
            words.update(seq)
            runs.update(tuple(seq[i : i + _RUN]) for i in range(len(seq) - _RUN + 1))
        return cls(frozenset(words), frozenset(runs))

    def echoed_by(self, content: str) -> bool:
        """True when an entry is mostly the instructions' own words (a small model echoing them)."""
        seq = _WORD.findall(content.lower())
        words = set(seq)
        if len(words) >= 4 and len(words & self.words) / len(words) >= 0.8:
            return True
        return any(tuple(seq[i : i + _RUN]) in self.runs for i in range(len(seq) - _RUN + 1))


def _check(content: str, note_words: _Instructions, said: str | None) -> str | None:
    text = content.strip()
    if not text:
        return "empty entry"
    if text.endswith(":") and len(text.split()) <= 3:
        return "a label with no value (e.g. 'timezone:')"
    if _NOTHING.match(text) or text.lower().startswith("nothing to save"):
        return "says there is nothing to save"
    if len(text) > _MAX_ENTRY:
        return f"longer than {_MAX_ENTRY} characters: a passage, not a fact"
    if note_words.echoed_by(text):
        return "repeats the instructions instead of a fact from the conversation"
    if len(content_words(text)) < 2:
        return "a bare word or name, not a fact (say what it is: 'the user's name is Sam')"
    if said is not None and not grounded(text, said, share=GROUNDING_SHARE, labels=FACT_LABELS):
        return "not in the conversation: a number or most of its words were never said (an invented detail?)"
    return None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PRONOUN = re.compile(r"^(?:she|he|they)\b", re.IGNORECASE)
_NAME = re.compile(r"^([A-Z][\w'-]+)\s")


def _sentences(passage: str) -> list[str]:
    """A passage's sentences, a leading she/he/they replaced by the name the passage opens
    with ("Caroline is ... She paints." → "Caroline paints." reads on its own in MEMORY.md)."""
    parts = [p.strip() for p in _SENTENCE_END.split(passage.strip()) if p.strip()]
    name = _NAME.match(parts[0]) if parts else None
    if name is None or _PRONOUN.match(name.group(1)):
        return parts
    return [_PRONOUN.sub(name.group(1), p, count=1) for p in parts]


def _accepted(content: str, note_words: _Instructions, said: str | None) -> tuple[list[str], str | None]:
    """The entries to write for one content (its checked sentences when it is a passage),
    or the reason it is refused."""
    problem = _check(content, note_words, said)
    if problem is None:
        return [content.strip()], None
    sentences = _sentences(content)
    if len(sentences) < 2:
        return [], problem
    # A small model often writes one passage instead of facts, an invented detail in one
    # sentence of it: keep each sentence that is a fact on its own.
    kept = [p for p in sentences if _check(p, note_words, said) is None]
    return (kept, None) if kept else ([], problem)


def _target(raw: JsonValue) -> Target:
    return "user" if raw == "user" else "memory"


def _writes_from_call(
    arguments: str, note_words: _Instructions, said: str | None
) -> tuple[list[FlushWrite], list[FlushRefusal]]:
    try:
        args: JsonValue = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return [], [FlushRefusal(arguments[:500], "the memory call's arguments are not valid JSON")]
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
            refusals.append(FlushRefusal(json.dumps(item)[:500], f"unknown action {action!r}"))
            continue
        if action == "remove":
            if isinstance(old, str) and old.strip():
                writes.append(FlushWrite(target, "", "remove", old))
            else:
                refusals.append(FlushRefusal(json.dumps(item)[:500], "remove without old_text"))
            continue
        text = content if isinstance(content, str) else ""
        if action == "replace":
            problem = _check(text, note_words, said)
            if problem is None and not (isinstance(old, str) and old.strip()):
                problem = "replace without old_text"
            kept = [text.strip()]
        else:
            kept, problem = _accepted(text, note_words, said)
        if problem is not None:
            refusals.append(FlushRefusal(text[:500] or json.dumps(item)[:500], problem))
            continue
        if action == "replace":
            writes.append(FlushWrite(target, text.strip(), "replace", old if isinstance(old, str) else None))
        else:
            writes += [FlushWrite(target, k) for k in kept]
    return writes, refusals


def _from_lines(
    text: str, note_words: _Instructions, said: str | None
) -> tuple[list[FlushWrite], list[FlushRefusal]]:
    writes: list[FlushWrite] = []
    refusals: list[FlushRefusal] = []
    for line in text.splitlines():
        if not line.strip() or _NOTHING.match(line):
            continue
        m = _LINE.match(line)
        if m is None:
            refusals.append(FlushRefusal(line.strip()[:500], "not a 'user: …' or 'memory: …' line"))
            continue
        content = m.group(2).strip()
        if _NOTHING.match(content):
            continue
        kept, problem = _accepted(content, note_words, said)
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
    shape: FlushShape, reply: ModelReply, *, instructions: Sequence[str] = (), said: str | None = None
) -> FlushReading:
    """The writes and refusals in a reply to a `shape` flush request (never raises).

    Args:
        shape: the shape the request was built with.
        reply: the model's reply.
        instructions: what else the model was told — pass the request's system prompt and
            tool descriptions: entries that merely echo them (or the flush note) are refused.
        said: the text the facts must come from (the flushed conversation); an entry not
            `memory.grounded` in it is refused. None: not checked.
    """
    note_words = _Instructions.of([load_text(_NOTES[shape]), *instructions])
    writes: list[FlushWrite] = []
    refusals: list[FlushRefusal] = []
    for call in reply.message.tool_calls:
        if call.name != MEMORY_TOOL:
            refusals.append(
                FlushRefusal(
                    f"{call.name}({call.arguments[:400]})",
                    "not available during flush: only the memory tool runs",
                )
            )
            continue
        w, r = _writes_from_call(call.arguments, note_words, said)
        writes += w
        refusals += r
    text = reply.message.content
    if shape == "text_list":
        w, r = _from_lines(text, note_words, said)
        writes += w
        refusals += r
    claimed = not writes and bool(_CLAIM.search(text))
    return FlushReading(_dedupe(writes), tuple(refusals), claimed, text)
