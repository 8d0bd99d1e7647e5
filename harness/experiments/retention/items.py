"""What a long-session replay scores: items (facts or questions), each said at a known line.

A `LongReplay` is transcript lines plus the items they plant. An item is scored after every
compression that happened after it was said, against what the model can still see, split
by source (memory snapshot, summary, kept messages); no model is asked anything:

- a *fact* (from a facts file) is retained (1) when one unit of a source matches it under
  the local-flush rule (`facts.fact_in`), else 0;
- a *question* (LoCoMo) scores the token recall of its gold answer (`scores.retained`).

`facts_replay` states the fact conversations first, then filler (LoCoMo lines) long enough
to force the compressions; a fact the filler alone matches would score whatever the arms do,
so it is left out (`excluded`). `questions_replay` takes a LoCoMo conversation as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.experiments.retention.facts import (
    FactConversation,
    MustNot,
    PlantedFact,
    chat_lines,
    fact_in_text,
)
from harness.experiments.retention.scores import (
    ADVERSARIAL,
    RETENTION_SOURCES,
    RetentionSource,
    retained,
)
from harness.experiments.retention.script import Question, RetentionReplay, ScriptLine

__all__ = [
    "Item",
    "ItemScore",
    "LongReplay",
    "fact_groups",
    "facts_budget",
    "facts_replay",
    "group_size",
    "questions_replay",
    "score_item",
]


@dataclass(frozen=True, slots=True)
class Item:
    """One thing to retain: a planted fact or a question, and the line it was said by."""

    id: str
    kind: Literal["fact", "question"]
    said_at: int
    """Index of the last line holding its evidence: it exists once `lines[: said_at + 1]` are in."""
    fact: PlantedFact | None = None
    question: Question | None = None


@dataclass(frozen=True, slots=True)
class ItemScore:
    value: float
    """1/0 for a fact; the gold answer's token recall (0–1) for a question."""
    where: tuple[RetentionSource, ...]
    """The sources that hold it wholly (or, for a question held nowhere wholly, the best one)."""


@dataclass(frozen=True, slots=True)
class LongReplay:
    """Lines to replay through one long session, and the items they plant."""

    name: str
    lines: tuple[ScriptLine, ...]
    items: tuple[Item, ...]
    system_note: str = ""
    excluded: tuple[str, ...] = field(default=())
    """Item ids left out because the filler alone matches them."""
    must_not: tuple[MustNot, ...] = field(default=())
    """What no saved memory may say (ids prefixed with their conversation's)."""
    chat: tuple[str, ...] = field(default=())
    """The lines of talk as `Speaker: words` (`facts.chat_lines`): no memory copies one whole."""


def score_item(item: Item, sources: Mapping[RetentionSource, str]) -> ItemScore:
    """How much of `item` the model can see in `sources`, and where."""
    if item.fact is not None:
        where = tuple(s for s in RETENTION_SOURCES if fact_in_text(sources.get(s, ""), item.fact))
        return ItemScore(1.0 if where else 0.0, where)
    assert item.question is not None
    r = retained(item.question.gold, sources)
    return ItemScore(r.recall, r.where)


def facts_replay(name: str, conversations: Sequence[FactConversation], filler: RetentionReplay) -> LongReplay:
    """The fact conversations, one after another, then the filler's lines."""
    lines: list[ScriptLine] = []
    items: list[Item] = []
    for conv in conversations:
        for n, (role, text) in enumerate(conv.messages):
            lines.append(ScriptLine(role, text, (f"{conv.id}:{n}",)))
        items += [Item(f"{conv.id}/{f.id}", "fact", len(lines) - 1, fact=f) for f in conv.facts]
    filler_text = "\n".join(line.content for line in filler.lines)
    excluded = tuple(i.id for i in items if i.fact is not None and fact_in_text(filler_text, i.fact))
    kept = tuple(i for i in items if i.id not in excluded)
    rules = tuple(
        MustNot(f"{conv.id}/{m.id}", m.match, m.unless) for conv in conversations for m in conv.must_not
    )
    every = (*lines, *filler.lines)
    return LongReplay(
        name, every, kept, "", excluded, rules, chat_lines((line.role, line.content) for line in every)
    )


def questions_replay(replay: RetentionReplay) -> LongReplay:
    """A LoCoMo conversation: every question with an answer and evidence in the lines."""
    where: dict[str, int] = {}
    for n, line in enumerate(replay.lines):
        for d in line.dia_ids:
            where[d] = n
    items: list[Item] = []
    for q in replay.questions:
        if q.category == ADVERSARIAL or not q.gold or not q.evidence or not q.evidence <= where.keys():
            continue
        said_at = max(where[d] for d in q.evidence)
        items.append(Item(f"q{q.index}", "question", said_at, question=q))
    chat = chat_lines((line.role, line.content) for line in replay.lines)
    return LongReplay(replay.name, replay.lines, tuple(items), replay.system_note, chat=chat)


def fact_groups(
    name: str,
    conversations: Sequence[FactConversation],
    filler: RetentionReplay,
    *,
    group: int | None,
    count: Callable[[str], int],
    window: int,
) -> list[LongReplay]:
    """The facts file as sessions of `group` conversations each (0: all in one; None: as
    `group_size` finds for `facts_budget(window)`, with `count` telling a text's tokens), each
    followed by the same filler: the memory budget holds a few users' facts, not a dozen."""
    if group is None:
        group = group_size(conversations, count=count, budget=facts_budget(window))
    size = group or len(conversations)
    return [
        facts_replay(f"{name}-{n // size + 1}", conversations[n : n + size], filler)
        for n in range(0, len(conversations), size)
    ]


def facts_budget(window: int) -> int:
    """The tokens of fact conversations one session says before its first compression can
    come: a third of the window. The threshold is three quarters of a small window and the
    eval session's system prompt and tools take over a third (measured on the tuning set at
    4,096: 39 of its 59 facts were said before the first compression with all twelve
    conversations, about 1,500 tokens, in one session)."""
    return window // 3


def group_size(conversations: Sequence[FactConversation], *, count: Callable[[str], int], budget: int) -> int:
    """Conversations per session (`fact_groups`' `group`) for the fewest sessions whose fact
    conversations each fit in `budget` tokens: all said before the first compression, so
    every fact is scored at every depth. A conversation over the budget alone is a session
    of its own (its late facts may then be said after a compression and not scored).

    Raises:
        ValueError: `budget` is not positive.
    """
    if budget <= 0:
        raise ValueError(f"a session's facts need a positive token budget, got {budget}")
    sizes = [sum(count(text) for _role, text in conv.messages) for conv in conversations]
    for sessions in range(1, len(sizes) + 1):
        size = -(-len(sizes) // sessions)
        if all(sum(sizes[n : n + size]) <= budget for n in range(0, len(sizes), size)):
            return size
    return 1
