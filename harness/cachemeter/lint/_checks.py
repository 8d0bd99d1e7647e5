"""The lint's checks: compare a request with the one it should extend and name each habit.

Each check returns `(rule, Occurrence)` pairs; `harness.cachemeter.lint` groups them. All
work on text (no tokenizer): `_diff.hunks` finds the changed lines, `_diff.quote` cuts
them short around the change, `_diff.value_kind` names a volatile value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TypeAlias

from pydantic import JsonValue

from harness.cachemeter._request import MeterMessage, MeterRequest, MeterTool
from harness.cachemeter.lint._diff import Hunk, changed_span, hunks, quote, shared_prefix, value_kind
from harness.cachemeter.lint._rules import RULES, HabitRule, Occurrence
from harness.cachemeter.lint._streams import Step
from harness.cachemeter.render import system_slots

__all__ = ["Hit", "check_step", "step_habits"]

Hit: TypeAlias = tuple[HabitRule, Occurrence]

_MEMORY_SLOTS = frozenset({"memory", "user"})
_MEMORY_WORDS = re.compile(r"memor|user profile|remember|notes about", re.IGNORECASE)
# A heading line: markdown, an opening tag, or a mostly upper-case title ("MEMORY (...) [...]").
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|<[A-Za-z_-]+>\s*$|[A-Z][A-Z ]{3,}(?:\s|\(|:|$))")
_REASONING = re.compile(
    r"<(think|thinking|reasoning|reflection)>.*?</\1>|\{[^{}]*\"type\":\"(?:redacted_)?thinking\"[^{}]*\}",
    re.DOTALL,
)
_RECALL = re.compile(r"<(memory-context|recall\w*|retrieved\w*|context)>.*?</\1>", re.DOTALL)
_VALUE_RULES: dict[str, HabitRule] = {
    "clock": "system-clock",
    "random_id": "system-random-id",
    "usage": "system-usage",
    "date": "system-date",
    "counter": "system-counter",
}


def _occ(step: Step, where: str, removed: Iterable[str] = (), added: Iterable[str] = ()) -> Occurrence:
    prev_line = step.previous.line if step.previous is not None else 0
    return Occurrence(step.index, step.request.line, prev_line, where, tuple(removed), tuple(added))


def _quoted(pairs: Iterable[Hunk], *, max_lines: int = 4) -> tuple[list[str], list[str]]:
    removed: list[str] = []
    added: list[str] = []
    for hunk in pairs:
        q_removed, q_added = quote(hunk, max_lines=max_lines)
        removed.extend(q_removed)
        added.extend(q_added)
    return removed, added


# ---------------------------------------------------------------- system prompt


def _slots_of(request: MeterRequest, hunk: Hunk) -> list[str]:
    """The non-empty slots the changed characters touch."""
    slots = [s for s in system_slots(request) if s.end > s.start]
    start, end = changed_span(hunk)
    return [s.name for s in slots if s.start < end and start < s.end] or [
        s.name for s in slots if s.start <= start <= s.end
    ][:1]


def _in_memory_block(text: str, hunk: Hunk) -> bool:
    """For traces without a slot map: the change sits under a heading that names memory."""
    if any(_HEADING.match(line) and _MEMORY_WORDS.search(line) for line in (*hunk.removed, *hunk.added)):
        return True
    for line in reversed(text[: hunk.start].splitlines()[-40:]):
        if _HEADING.match(line):
            return bool(_MEMORY_WORDS.search(line))
    return False


def _system_rule(
    request: MeterRequest, hunk: Hunk, slots: list[str], *, mid_session: bool
) -> HabitRule | None:
    if request.slots:
        memory = bool(_MEMORY_SLOTS.intersection(slots))
    else:
        memory = _in_memory_block(request.system, hunk)
    if memory:
        return "memory-write" if mid_session else None
    kind = value_kind("\n".join(hunk.removed), "\n".join(hunk.added))
    if not mid_session and kind not in ("clock", "random_id", "counter"):
        return None  # a new session may bring a new date, new memory, a new prompt
    return "system-edited" if kind is None else _VALUE_RULES[kind]


def _system(step: Step, previous: MeterRequest, *, mid_session: bool) -> list[Hit]:
    req = step.request
    if previous.system == req.system:
        return []
    grouped: dict[HabitRule, tuple[list[str], list[Hunk]]] = {}
    for hunk in hunks(previous.system, req.system):
        slots = _slots_of(req, hunk)
        rule = _system_rule(req, hunk, slots, mid_session=mid_session)
        if rule is not None:
            where, parts = grouped.setdefault(rule, ([], []))
            where.extend(s for s in slots if s not in where)
            parts.append(hunk)
    hits: list[Hit] = []
    for rule, (slots, parts) in grouped.items():
        removed, added = _quoted(parts)
        place = "system prompt" + (f", slot {', '.join(repr(s) for s in slots)}" if slots else "")
        hits.append((rule, _occ(step, place, removed[:8], added[:8])))
    return hits


# ---------------------------------------------------------------- tools and model


def _tool_json(tool: MeterTool) -> str:
    obj: JsonValue = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False)


def _request_tokens(req: MeterRequest) -> int:
    """The whole request's size in tokens, estimated (4 characters a token): what a change of
    the tool list, which comes before everything, makes a cache re-read."""
    chars = sum(len(_tool_json(t)) for t in req.tools) + len(req.system)
    chars += sum(len(m.content) + sum(len(c.arguments) for c in m.tool_calls) for m in req.messages)
    return chars // 4


def _tools(step: Step, previous: MeterRequest) -> list[Hit]:
    old, new = previous.tools, step.request.tools
    if old == new:
        return []
    cost = _request_tokens(step.request)
    old_names, new_names = [t.name for t in old], [t.name for t in new]
    if sorted(old_names) == sorted(new_names) and sorted(map(_tool_json, old)) == sorted(
        map(_tool_json, new)
    ):
        occ = _occ(step, "tool list re-ordered", [", ".join(old_names)], [", ".join(new_names)])
        return [("tools-order", replace(occ, tokens=cost))]
    gone = [f"tool {n!r}" for n in old_names if n not in new_names]
    came = [f"tool {n!r}" for n in new_names if n not in old_names]
    if gone or came:
        where = "tool list: " + ", ".join(
            f"{n} {what}" for n, what in ((len(came), "added"), (len(gone), "removed")) if n
        )
        return [("tools-changed", replace(_occ(step, where, gone, came), tokens=cost))]
    before = {t.name: t for t in old}
    changed = next(t for t in new if before[t.name] != t)
    removed, added = _quoted(hunks(_tool_json(before[changed.name]), _tool_json(changed))[:3], max_lines=3)
    return [("tools-changed", replace(_occ(step, f"tool {changed.name!r}", removed, added), tokens=cost))]


def _model(step: Step, previous: MeterRequest) -> list[Hit]:
    if previous.model == step.request.model:
        return []
    return [("model-switch", _occ(step, "model", [previous.model], [step.request.model]))]


# ---------------------------------------------------------------- history


def _calls_text(m: MeterMessage) -> list[str]:
    return [f"{c.name}({c.arguments}) id={c.id}" for c in m.tool_calls]


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a or "null") == json.loads(b or "null"))
    except json.JSONDecodeError:
        return False


def _message_rule(a: MeterMessage, b: MeterMessage) -> tuple[HabitRule, list[str], list[str]]:
    """Why sent message `a` came back as `b`, and the quoted bytes."""
    if a.content == b.content:
        pairs = [(x, y) for x, y in zip(a.tool_calls, b.tool_calls, strict=False) if x != y]
        same_calls = len(a.tool_calls) == len(b.tool_calls)
        if (
            same_calls
            and pairs
            and all(
                (x.id, x.name) == (y.id, y.name) and _same_json(x.arguments, y.arguments) for x, y in pairs
            )
        ):
            return "history-tool-args", [x.arguments for x, _ in pairs], [y.arguments for _, y in pairs]
        old = [*_calls_text(a), f"tool_call_id={a.tool_call_id}", f"name={a.name}"]
        new = [*_calls_text(b), f"tool_call_id={b.tool_call_id}", f"name={b.name}"]
        return "history-rewritten", [x for x in old if x not in new], [x for x in new if x not in old]
    cut = _REASONING.search(a.content)
    if cut is not None and _REASONING.sub("", a.content).strip() == b.content.strip():
        shown, _ = quote(Hunk(tuple(cut.group(0).splitlines()), (), 0, 0), max_lines=3)
        return "history-reasoning", list(shown), []
    removed, added = _quoted(hunks(a.content, b.content))
    recall = _RECALL.search(a.content) or _RECALL.search(b.content)
    if recall and _RECALL.sub("", a.content).strip() == _RECALL.sub("", b.content).strip():
        return "history-recall", removed, added
    return "history-rewritten", removed, added


def _history(step: Step, previous: MeterRequest) -> list[Hit]:
    old, new = previous.messages, step.request.messages
    base = step.request.message_base
    for k, a in enumerate(old):
        if k >= len(new):
            where = f"messages {k + base}..{len(old) - 1 + base}"
            gone = [f"{len(old) - k} sent message(s) dropped; the first: {a.role} {a.content[:80]!r}"]
            return [("history-rewritten", _occ(step, where, gone))]
        b = new[k]
        if a == b:
            continue
        rule, removed, added = _message_rule(a, b)
        return [(rule, _occ(step, f"message {k + base} ({a.role})", removed, added))]
    return []


# ---------------------------------------------------------------- one step


def _own_system_prompt(conversation: str, flush: str) -> bool:
    """A flush's system prompt shares less than a tenth of the conversation's leading
    characters: a prompt of its own, not an edit of the conversation's."""
    shared = shared_prefix(conversation, flush)
    return bool(conversation) and shared < len(conversation) // 10


def _flush(step: Step, previous: MeterRequest) -> list[Hit]:
    """A flush should extend the conversation; a system change is judged like a turn's."""
    req = step.request
    parts: list[str] = []
    removed: list[str] = []
    added: list[str] = []
    if _own_system_prompt(previous.system, req.system):
        # not an edit of the conversation's prompt but one of its own (keel's flush in
        # pieces): a prefix the flush does not share, never a memory write
        hits: list[Hit] = []
        parts.append("system prompt")
    else:
        hits = _system(step, previous, mid_session=True)
    if req.tools != previous.tools:
        parts.append("tool list")
        removed.append("tools: " + ", ".join(t.name for t in previous.tools))
        added.append("tools: " + ", ".join(t.name for t in req.tools))
    if req.messages[: len(previous.messages)] != previous.messages:
        parts.append("history")
    if parts:
        verb = "differ" if len(parts) > 1 else "differs"
        where = f"flush call: its {' and '.join(parts)} {verb} from the conversation's"
        hits.append(("flush-prefix", _occ(step, where, removed, added)))
    return hits


def check_step(step: Step) -> list[Hit]:
    """Every habit this request shows against the one it should extend."""
    prev = step.previous
    if prev is None or step.relation == "start":
        return []
    if step.relation == "side":
        return _flush(step, prev) if step.request.purpose == "flush" else []
    if step.relation == "new_session":
        return _system(step, prev, mid_session=False)
    hits = _model(step, prev) + _tools(step, prev)
    if step.relation == "continue":
        hits += _system(step, prev, mid_session=True) + _history(step, prev)
    return hits


def step_habits(step: Step) -> tuple[str, ...]:
    """The habits `step` shows, one line each, with the changed lines quoted under it."""
    lines: list[str] = []
    for rule, occ in check_step(step):
        lines.append(f"{rule} — {RULES[rule].title} ({occ.where})")
        lines.extend(f"  - {text}" for text in occ.removed)
        lines.extend(f"  + {text}" for text in occ.added)
    return tuple(lines)
