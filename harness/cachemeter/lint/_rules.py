"""The lint's rules (each habit's name, whether it breaks the cache, what it is, how to fix it)
and what a check reports: an `Occurrence` of a habit, grouped into a `LintFinding`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

__all__ = ["HABIT_RULES", "RULES", "HabitRule", "LintFinding", "LintSeverity", "Occurrence", "Rule"]

HabitRule: TypeAlias = Literal[
    "system-clock",
    "system-date",
    "system-counter",
    "system-random-id",
    "system-usage",
    "memory-write",
    "system-edited",
    "tools-order",
    "tools-changed",
    "model-switch",
    "history-tool-args",
    "history-reasoning",
    "history-recall",
    "history-rewritten",
    "flush-prefix",
]
HABIT_RULES: tuple[HabitRule, ...] = get_args(HabitRule)
LintSeverity: TypeAlias = Literal["habit", "note"]


@dataclass(frozen=True, slots=True)
class Rule:
    severity: LintSeverity
    title: str
    fix: str


_FROZEN_MEMORY = (
    "freeze the memory snapshot for the session (keel: memory.snapshot_policy: frozen): a write "
    "lands on disk at once, the tool's reply confirms it to the model, and the prompt shows it from "
    "the next session or compression on"
)

RULES: dict[HabitRule, Rule] = {
    "system-clock": Rule(
        "habit",
        "a clock time in the system prompt",
        "keep the clock out of the system prompt: state the date only (keel writes 'Conversation "
        "started: <date>' once per session), and give the time in the newest user message or a tool "
        "result when the model needs it",
    ),
    "system-date": Rule(
        "habit",
        "a date in the system prompt that changes mid-session",
        "fix the date when the session starts and replay it unchanged until the session ends",
    ),
    "system-counter": Rule(
        "habit",
        "a counter in the system prompt",
        "move counters (turns, messages, tokens, requests) out of the system prompt; append them to "
        "the newest user message if the model needs them",
    ),
    "system-random-id": Rule(
        "habit",
        "a random id in the system prompt",
        "create ids once per session and reuse them, or keep them out of the prompt (request ids "
        "belong in headers and logs)",
    ),
    "system-usage": Rule(
        "habit",
        "a usage percentage in the system prompt",
        "take usage figures (context used, budget left) out of the system prompt; append them to the "
        "newest user message if the model needs them",
    ),
    "memory-write": Rule("habit", "memory written into the system prompt mid-session", _FROZEN_MEMORY),
    "system-edited": Rule(
        "habit",
        "the system prompt edited mid-session",
        "build the system prompt once per session and replay it byte for byte; put what changes "
        "after the history (in the newest user message), or rebuild the prompt only at a compression",
    ),
    "tools-order": Rule(
        "habit",
        "tools changed mid-session: the same tools re-ordered",
        "build the tool list once per session in a fixed order (sorted by name, say) and send that "
        "same list with every request",
    ),
    "tools-changed": Rule(
        "habit",
        "tools changed mid-session: added, removed or their schema changed",
        "keep one tool list (names, descriptions, schemas) per session: it comes before everything "
        "else, so any change re-reads the whole prompt; to switch a tool off, answer its calls with "
        "an error instead of removing it",
    ),
    "model-switch": Rule(
        "habit",
        "the model switched mid-conversation",
        "keep one model per conversation (caches are per model); run side tasks on another model as "
        "separate calls with short prompts of their own",
    ),
    "history-tool-args": Rule(
        "habit",
        "tool-call arguments re-serialized in history",
        "replay each tool call's arguments as the exact string the model produced; do not parse and "
        "re-dump them (key order and spacing change the bytes)",
    ),
    "history-reasoning": Rule(
        "habit",
        "reasoning stripped from history after it was sent",
        "decide once whether reasoning stays in history: keep it on every later request, or drop it "
        "before the message is first replayed — never some turns later",
    ),
    "history-recall": Rule(
        "habit",
        "recalled context re-rendered in an earlier message",
        "store the message as first sent (user text plus recalled context) and replay those bytes "
        "(keel: recall.persist: true); never re-run recall for an old turn",
    ),
    "history-rewritten": Rule(
        "habit",
        "history rewritten in place",
        "treat sent messages as append-only; shorten or edit history only at a compression, once",
    ),
    "flush-prefix": Rule(
        "note",
        "the flush call does not extend the conversation's prompt",
        "send the flush with the conversation's unchanged tools and system prompt, appending the "
        "flush note after the history (keel: compression.flush: cache_safe), so it reuses the cache",
    ),
}


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One place a habit showed: the request, the one it should have extended, the bytes.

    Attributes:
        index: the request's 0-based position in the trace.
        line: its line in the trace file (1-based; 0 when built in memory).
        previous_line: the line of the request it was compared with.
        where: the part that changed (`system prompt, slot 'memory'`, `message 3 (assistant)`).
        removed, added: the changed lines, quoted short (at most a few of each).
        tokens: for a change of the tool list, the prompt tokens it made a cache re-read
            (everything after the tools: the whole request, estimated at 4 characters a
            token; the lint has no tokenizer); 0 for the other habits.
    """

    index: int
    line: int
    previous_line: int
    where: str
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One habit and every place it showed, in trace order."""

    rule: HabitRule
    severity: LintSeverity
    title: str
    fix: str
    occurrences: tuple[Occurrence, ...]
