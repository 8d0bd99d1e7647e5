"""`keel eval retention --compressions K`: arms side by side through one long session each.

Arms (each in a fresh keel home, the same lines, the same compression points):

    off                  no flush: only the summaries and the kept messages remain
    memory_only          the flush with only the memory tool, one request over the whole
                         transcript (the classic design)
    cache_safe           the flush with the session's unchanged tool list
    forced               the unchanged tool list, `tool_choice` naming the memory tool
    memory_only_no_index memory_only without the identifier index in the summary
    memory_only_chunked  keel's default flush: memory_only over the dropped turns only, in
                         pieces of `flush_chunk_tokens` (one request each, under the
                         note-taker system prompt; `compress/pieces.py`)
    background           a memory review every N user lines, no flush at compression
    background+flush     the review and the memory_only flush

The first arm fixes the compression points (`LongPlan`); all requests go through one
`SharedReplies`, so the summaries — the same middles in every arm — are generated once.
Scoring needs no model (`items.score_item`). Precision needs none either: every entry an arm
saved is checked against the replay's `must_not` rules and its chat lines
(`facts.wrong_memory`), and the ones that fail are the arm's `wrong_memories`. `state`
carries what is done: resumed runs skip the (replay, arm) pairs it holds and reuse its plans.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, get_args

from pydantic import JsonValue

from harness.config import DEFAULT_FLUSH_CHUNK_TOKENS, KeelConfig
from harness.experiments.retention.facts import wrong_memory
from harness.experiments.retention.items import LongReplay, score_item
from harness.experiments.retention.long import LongPlan, Snapshot, run_long_arm
from harness.experiments.retention.outcomes import (
    Outcome,
    depth_rows,
    depth_table,
    final_gain,
    outcome_from_json,
    outcome_json,
)
from harness.experiments.retention.scores import RetentionSource
from harness.experiments.retention.shared_replies import SharedReplies
from harness.experiments.runner import apply_overrides
from harness.models.base import ModelClient

__all__ = [
    "LONG_ARMS",
    "LongArmName",
    "LongOptions",
    "LongState",
    "WrongMemory",
    "long_overrides",
    "report_lines",
    "run_long_retention",
    "score_snapshots",
    "wrong_memories",
]

LongArmName = Literal[
    "off",
    "memory_only",
    "cache_safe",
    "forced",
    "memory_only_no_index",
    "memory_only_chunked",
    "background",
    "background+flush",
]
LONG_ARMS: tuple[LongArmName, ...] = get_args(LongArmName)


@dataclass(frozen=True, slots=True)
class LongOptions:
    """How big the run is.

    Attributes:
        window: the context window of every arm (small, so compressions come often).
        compressions: compressions per arm (items are scored after each).
        review_every: user lines between two reviews in the background arms.
        memory_chars: the MEMORY.md and USER.md budgets (None: the config's). A facts file
            plants a dozen users' facts in one session; one user's budget would refuse most.
        flush_chunk_tokens: the piece size of the `memory_only_chunked` arm.
    """

    window: int = 4096
    compressions: int = 3
    review_every: int = 12
    memory_chars: int | None = None
    flush_chunk_tokens: int = DEFAULT_FLUSH_CHUNK_TOKENS


@dataclass(frozen=True, slots=True)
class WrongMemory:
    """An entry an arm saved that says what it must not (`rule`: a `must_not` id, or
    `copied line`)."""

    replay: str
    arm: str
    rule: str
    entry: str


@dataclass(slots=True)
class LongState:
    """What a run has done: its outcomes, each replay's plan, each arm's snapshots (JSON),
    and the wrong memories each arm saved."""

    outcomes: list[Outcome] = field(default_factory=list)
    plans: dict[str, LongPlan] = field(default_factory=dict)
    arms: list[dict[str, JsonValue]] = field(default_factory=list)
    wrong: list[WrongMemory] = field(default_factory=list)

    def done(self, replay: str, arm: str) -> bool:
        return any(a.get("replay") == replay and a.get("arm") == arm for a in self.arms)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "version": 1,
            "plans": {k: list(p.compress_after) for k, p in self.plans.items()},
            "arms": list(self.arms),
            "outcomes": [outcome_json(o) for o in self.outcomes],
            "wrong_memories": [
                {"replay": w.replay, "arm": w.arm, "rule": w.rule, "entry": w.entry} for w in self.wrong
            ],
        }

    @classmethod
    def from_json(cls, raw: dict[str, JsonValue]) -> LongState:
        plans = raw.get("plans")
        outcomes = raw.get("outcomes")
        arms = raw.get("arms")
        wrong = raw.get("wrong_memories")
        return cls(
            outcomes=[outcome_from_json(o) for o in outcomes if isinstance(o, dict)]
            if isinstance(outcomes, list)
            else [],
            plans={
                k: LongPlan(tuple(int(cast(int, n)) for n in v))
                for k, v in (plans.items() if isinstance(plans, dict) else ())
                if isinstance(v, list)
            },
            arms=[a for a in arms if isinstance(a, dict)] if isinstance(arms, list) else [],
            wrong=[
                WrongMemory(str(w.get("replay")), str(w.get("arm")), str(w.get("rule")), str(w.get("entry")))
                for w in (wrong if isinstance(wrong, list) else [])
                if isinstance(w, dict)
            ],
        )


def long_overrides(arm: LongArmName, replay: LongReplay, options: LongOptions) -> dict[str, JsonValue]:
    """The config an arm runs under, on top of the user's."""
    flush = {
        "background": "off",
        "background+flush": "memory_only",
        "memory_only_no_index": "memory_only",
        "memory_only_chunked": "memory_only",
    }
    memory: dict[str, JsonValue] = {}
    if options.memory_chars is not None:
        memory = {"memory_char_limit": options.memory_chars, "user_char_limit": options.memory_chars}
    return {
        "memory": memory,
        "model": {"context_window": options.window, "temperature": 0.0},
        "skills": {"enabled": False},
        "agent": {"system_message": replay.system_note},
        "compression": {
            "enabled": True,
            "flush": flush.get(arm, arm),
            "identifier_index": arm != "memory_only_no_index",
            "flush_chunk_tokens": options.flush_chunk_tokens if arm == "memory_only_chunked" else 0,
        },
    }


def score_snapshots(replay: LongReplay, arm: str, snaps: Sequence[Snapshot]) -> list[Outcome]:
    """Every item said before each compression, scored against that compression's snapshot."""
    out: list[Outcome] = []
    for snap in snaps:
        sources: dict[RetentionSource, str] = {
            "memory": snap.memory,
            "summary": snap.summary,
            "tail": snap.tail,
        }
        for item in replay.items:
            if item.said_at >= snap.after_line:
                continue
            depth = sum(1 for s in snaps if s.compression <= snap.compression and s.after_line > item.said_at)
            score = score_item(item, sources)
            out.append(
                Outcome(
                    replay.name,
                    arm,
                    snap.compression,
                    item.id,
                    item.kind,
                    depth,
                    score.value,
                    score.where,
                    snap is snaps[-1],
                )
            )
    return out


def _entry(saved: str) -> str:
    """A snapshot's `target: content` line without its target."""
    target, sep, content = saved.partition(": ")
    return content if sep and target in ("memory", "user") else saved


def wrong_memories(replay: LongReplay, arm: str, snaps: Sequence[Snapshot]) -> list[WrongMemory]:
    """The distinct entries the arm saved that are wrong memories (`facts.wrong_memory`)."""
    entries = dict.fromkeys(_entry(e) for snap in snaps for e in snap.saved)
    out: list[WrongMemory] = []
    for entry in entries:
        rule = wrong_memory(entry, replay.must_not, replay.chat)
        if rule is not None:
            out.append(WrongMemory(replay.name, arm, rule, entry))
    return out


def report_lines(state: LongState, arms: Sequence[str]) -> list[str]:
    """The per-depth table, each arm's wrong memories, the best arm, and the headline as the
    last line: `retention_gain X ci_low Y wrong_memories Z` (Z: the best arm's)."""
    rows = depth_rows(state.outcomes, arms)
    lines = depth_table(rows)
    for arm in arms:
        mine = [w for w in state.wrong if w.arm == arm]
        lines.append(f"{arm}: wrong_memories {len(mine)}")
        lines += [f"  [{w.rule}] {w.entry}" for w in mine]
    best = final_gain(rows)
    if best is None:
        return [*lines, "retention_gain - ci_low - wrong_memories -"]
    arm, gain = best
    wrong = sum(1 for w in state.wrong if w.arm == arm)
    return [
        *lines,
        f"best arm after the last compression: {arm} (n={gain.n}, 95% CI [{gain.low:+.4f}, {gain.high:+.4f}])",
        f"retention_gain {gain.mean:.4f} ci_low {gain.low:.4f} wrong_memories {wrong}",
    ]


def _arm_json(replay: str, arm: str, snaps: Sequence[Snapshot], wall_s: float) -> dict[str, JsonValue]:
    return {
        "replay": replay,
        "arm": arm,
        "wall_s": round(wall_s, 1),
        "snapshots": [
            {
                "compression": s.compression,
                "after_line": s.after_line,
                "tokens": s.tokens,
                "flush_s": s.flush_s,
                "summary_s": s.summary_s,
                "session_id": s.session_id,
                "parent_session_id": s.parent_session_id,
                "saved": list(s.saved),
                "refused": list(s.refused),
                "memory": s.memory,
                "summary": s.summary,
                "tail": s.tail,
            }
            for s in snaps
        ],
    }


async def run_long_retention(
    replays: Sequence[LongReplay],
    config: KeelConfig,
    *,
    model: ModelClient,
    root: Path,
    arms: Sequence[LongArmName],
    options: LongOptions = LongOptions(),
    state: LongState | None = None,
    on_step: Callable[[str, str, int, int], None] = lambda _r, _a, _d, _n: None,
    on_arm: Callable[[LongState], None] = lambda _s: None,
) -> LongState:
    """Run every (replay, arm) not already in `state`; `on_arm` hears the state after each.

    `off` runs first in each replay when asked for (it fixes the plan cheapest: no flush).

    Raises:
        ConfigError: a replay is too short for the compressions asked for.
    """
    state = state or LongState()
    shared = model if isinstance(model, SharedReplies) else SharedReplies(model)
    ordered = sorted(dict.fromkeys(arms), key=lambda a: a != "off")
    for replay in replays:
        for arm in ordered:
            if state.done(replay.name, arm):
                continue
            cfg = apply_overrides(config, long_overrides(arm, replay, options))
            home = root / replay.name / arm.replace("+", "_")

            def step(done: int, total: int, r: str = replay.name, a: str = arm) -> None:
                on_step(r, a, done, total)

            started = time.monotonic()
            snaps, plan = await run_long_arm(
                replay,
                cfg,
                model=shared,
                home=home,
                trace_path=home / "trace.jsonl",
                compressions=options.compressions,
                plan=state.plans.get(replay.name),
                review_every=options.review_every if arm.startswith("background") else 0,
                on_step=step,
            )
            state.plans.setdefault(replay.name, plan)
            state.outcomes += score_snapshots(replay, arm, snaps)
            state.wrong += wrong_memories(replay, arm, snaps)
            state.arms.append(_arm_json(replay.name, arm, snaps, time.monotonic() - started))
            on_arm(state)
    return state
