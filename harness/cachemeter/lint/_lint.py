"""`keel cache lint`: the habits that break a prompt cache, with the changing bytes and a fix.

The report (`keel cache report`) says *where* each request diverged; the lint says *why*,
in terms of what the agent did. It compares every request with the one it should extend
(`_streams`: the previous turn request of its conversation) at the text
level — no tokenizer — and names the habit behind each difference:

    system-clock / -date / -counter / -random-id / -usage
                       a volatile value in the system prompt (a clock time, a date, a
                       counter, a random id, a usage percentage) that changes mid-session;
                       a clock, counter or random id that differs between sessions too
    memory-write       the memory block in the system prompt re-rendered after a write
                       (its entries and its usage header), mid-session
    system-edited      any other mid-session change of the system prompt
    tools-order        tools changed mid-session: the same tools, in another order
    tools-changed      tools changed mid-session: added, removed or re-described (schema)
                       — both with the tokens the change made a cache re-read (the whole
                       request: the tools come first), estimated
    model-switch       the conversation's model changed
    history-tool-args  an earlier tool call's arguments re-serialized (same JSON, other bytes)
    history-reasoning  reasoning stripped from an earlier assistant message after the fact
    history-recall     recalled context re-rendered (or dropped) in an earlier user message
    history-rewritten  any other edit of an already-sent message, or history cut short
    flush-prefix       (a note) the flush call does not extend the conversation's prompt

A compression is allowed its one rebuild: the first turn request after a summary call may
change the system prompt and the history. Each finding quotes the lines that changed
(removed `-`, added `+`), says where they sit (a keel slot, a message index, a tool) and
names a fix. Habits make `keel cache lint` exit non-zero; notes do not (unless `--strict`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from harness.cachemeter._request import MeterRequest
from harness.cachemeter.lint._checks import check_step
from harness.cachemeter.lint._rules import (
    HABIT_RULES,
    RULES,
    HabitRule,
    LintFinding,
    LintSeverity,
    Occurrence,
)
from harness.cachemeter.lint._streams import walk
from harness.cachemeter.traces import read_requests, request_from_record
from harness.trace import TraceRecord
from harness.types import JsonObject

__all__ = [
    "HABIT_RULES",
    "LINT_SCHEMA",
    "HabitRule",
    "LintFinding",
    "LintReport",
    "LintSeverity",
    "Occurrence",
    "lint",
]

LINT_SCHEMA = "keel.cache-lint/1"


@dataclass(frozen=True, slots=True)
class LintReport:
    """What the lint found in one trace: findings in rule order, habits before notes."""

    requests: int
    findings: tuple[LintFinding, ...]

    @property
    def habits(self) -> tuple[LintFinding, ...]:
        """The findings that break the cache (notes left out)."""
        return tuple(f for f in self.findings if f.severity == "habit")

    @property
    def notes(self) -> tuple[LintFinding, ...]:
        return tuple(f for f in self.findings if f.severity == "note")

    def to_json(self) -> JsonObject:
        """`keel.cache-lint/1`: requests, counts, and each finding with all its occurrences."""
        findings: list[JsonValue] = [
            {
                "rule": f.rule,
                "severity": f.severity,
                "title": f.title,
                "fix": f.fix,
                "count": len(f.occurrences),
                "occurrences": [
                    {
                        "index": o.index,
                        "line": o.line,
                        "previous_line": o.previous_line,
                        "where": o.where,
                        "removed": list(o.removed),
                        "added": list(o.added),
                        "tokens": o.tokens,
                    }
                    for o in f.occurrences
                ],
            }
            for f in self.findings
        ]
        return {
            "schema": LINT_SCHEMA,
            "requests": self.requests,
            "habits": len(self.habits),
            "notes": len(self.notes),
            "findings": findings,
        }


def _normalized(trace: Path | Iterable[MeterRequest | TraceRecord]) -> Iterable[MeterRequest]:
    if isinstance(trace, Path):
        return read_requests(trace)
    return (
        item if isinstance(item, MeterRequest) else request_from_record(item, line=i + 1)
        for i, item in enumerate(trace)
    )


def lint(trace: Path | Iterable[MeterRequest | TraceRecord]) -> LintReport:
    """Find the cache-breaking habits in a trace (a blocking pass; see the module docstring).

    Args:
        trace: a trace file (keel JSONL or chat JSONL), or its requests in trace order.

    Raises:
        MeterInputError: the file is missing or a line is not a request.
    """
    found: dict[HabitRule, list[Occurrence]] = {}
    count = 0
    for step in walk(_normalized(trace)):
        count += 1
        for rule, occurrence in check_step(step):
            found.setdefault(rule, []).append(occurrence)
    order = sorted(found, key=lambda r: (RULES[r].severity != "habit", HABIT_RULES.index(r)))
    findings = tuple(
        LintFinding(rule, RULES[rule].severity, RULES[rule].title, RULES[rule].fix, tuple(found[rule]))
        for rule in order
    )
    return LintReport(count, findings)
