"""`keel eval retention`: does the flush keep what matters? Arms side by side, one run.

Each arm replays the same conversation in a fresh keel home (`run.py`), compresses
once for real, and answers the questions whose evidence the compression removed:

    off                    no flush: only the summary (and the kept tail) remain
    memory_only            the classic flush: one request over the whole transcript that
                           carries only the memory tool
    memory_only_chunked    keel's default flush: memory_only over the dropped turns only, in
                           pieces of `compression.flush_chunk_tokens` (null: 512)
    cache_safe             the flush sends the session's unchanged tool list
    forced                 the unchanged tool list, `tool_choice` naming the memory tool
    memory_only_no_index   memory_only without the identifier index in the summary
    ceiling                no compression: the whole replayed conversation in context
    floor                  no history at all

Scores (`scores.py`): *answer retained* — token recall of the gold answer in
what the model sees after compression (memory snapshot, summary, kept messages), and where
it survived; *answer F1* — LoCoMo's own rules, category 5 by its "not mentioned" rule.
Costs (`costs.py`) come from each arm's trace through the cache meter.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from pydantic import JsonValue

from harness.cachemeter import MeterRun, SimName
from harness.config import DEFAULT_FLUSH_CHUNK_TOKENS, KeelConfig
from harness.experiments.retention.costs import CompressionCosts, compression_costs
from harness.experiments.retention.run import ArmRun, ReplayPlan, run_arm
from harness.experiments.retention.scores import (
    ADVERSARIAL,
    RETENTION_SOURCES,
    Retention,
    RetentionSource,
    answer_f1,
    retained,
)
from harness.experiments.retention.script import Question, RetentionReplay
from harness.experiments.retention.shared_replies import SharedReplies
from harness.experiments.runner import apply_overrides
from harness.models.base import ModelClient

__all__ = [
    "EVAL_TIMEOUT_S",
    "FLUSH_ARMS",
    "RETENTION_ARMS",
    "RetentionArm",
    "RetentionArmName",
    "RetentionOptions",
    "RetentionResult",
    "ScoredQuestion",
    "arm_overrides",
    "model_config",
    "run_retention",
    "where_counts",
]

RetentionArmName = Literal[
    "off",
    "memory_only",
    "memory_only_chunked",
    "cache_safe",
    "forced",
    "memory_only_no_index",
    "ceiling",
    "floor",
]
RETENTION_ARMS: tuple[RetentionArmName, ...] = get_args(RetentionArmName)
FLUSH_ARMS: tuple[RetentionArmName, ...] = (
    "memory_only",
    "memory_only_chunked",
    "cache_safe",
    "forced",
    "memory_only_no_index",
)
"""The arms whose flush runs (the retention gain compares the best of them with `off`)."""
_COMPRESSING = ("off", *FLUSH_ARMS)
EVAL_TIMEOUT_S = 1800.0
"""The shortest request timeout an eval run uses."""


@dataclass(frozen=True, slots=True)
class RetentionOptions:
    """How big the run is.

    Attributes:
        window: the context window the compressing arms run with (small, so compression fires).
        ceiling_window: the window the ceiling may fill (the model's real one).
        questions: at most this many questions (0: every eligible one).
        answer_tokens: the output cap of each answer.
        turn_tokens: the output cap of the two real turns.
        sims: the cache simulators the costs are computed under.
        flush_chunk_tokens: the piece size of the `memory_only_chunked` arm (keel's default).
    """

    window: int = 4096
    ceiling_window: int = 8192
    questions: int = 12
    answer_tokens: int = 32
    turn_tokens: int = 96
    sims: tuple[SimName, ...] = ("ideal", "vllm", "llamacpp", "openai", "anthropic")
    flush_chunk_tokens: int = DEFAULT_FLUSH_CHUNK_TOKENS


@dataclass(frozen=True, slots=True)
class ScoredQuestion:
    question: Question
    answer: str
    f1: float
    retention: Retention | None
    """None for adversarial questions (there is no answer to retain)."""


@dataclass(frozen=True, slots=True)
class RetentionArm:
    """One arm: what it ran, its scores and its costs."""

    name: RetentionArmName
    run: ArmRun
    scored: tuple[ScoredQuestion, ...]
    costs: CompressionCosts

    @property
    def ran(self) -> bool:
        return self.run.status is None

    @property
    def compressed(self) -> bool:
        """It ran, and compressed if it was meant to (no `note`)."""
        return self.ran and self.run.note is None

    def retained(self, category: int | None = None) -> float | None:
        """Mean answer-retained recall (adversarial questions excluded)."""
        values = [
            s.retention.recall
            for s in self.scored
            if s.retention is not None and (category is None or s.question.category == category)
        ]
        return statistics.fmean(values) if values else None

    def f1(self, category: int | None = None) -> float | None:
        values = [s.f1 for s in self.scored if category is None or s.question.category == category]
        return statistics.fmean(values) if values else None

    def survived_in(self, source: RetentionSource) -> int:
        """Questions whose answer survived (wholly, or best partly) in `source`."""
        return sum(1 for s in self.scored if s.retention is not None and source in s.retention.where)


@dataclass(frozen=True, slots=True)
class RetentionResult:
    replay: str
    plan: ReplayPlan
    options: RetentionOptions
    arms: tuple[RetentionArm, ...]

    def retention_gain(self) -> float | None:
        """Answer retained of the best flush arm minus `off` (None when either did not run or
        did not compress)."""
        by_name = {a.name: a.retained() for a in self.arms if a.compressed}
        off = by_name.get("off")
        flushes = [v for n, v in by_name.items() if n in FLUSH_ARMS and v is not None]
        return None if off is None or not flushes else max(flushes) - off


def arm_overrides(
    arm: RetentionArmName, replay: RetentionReplay, options: RetentionOptions
) -> dict[str, JsonValue]:
    """The config an arm runs under, on top of the user's: small window, deterministic
    turns, no skills (their schemas would fill the small window), the arm's flush mode."""
    compression: dict[str, JsonValue] = {}
    window = options.window
    if arm in _COMPRESSING:
        mode = "memory_only" if arm in ("memory_only_no_index", "memory_only_chunked") else arm
        compression = {
            "enabled": True,
            "flush": mode,
            "identifier_index": arm != "memory_only_no_index",
            "flush_chunk_tokens": options.flush_chunk_tokens if arm == "memory_only_chunked" else 0,
        }
    else:
        compression = {"enabled": False}
        window = options.ceiling_window
    return {
        "model": {"context_window": window, "max_output_tokens": options.turn_tokens, "temperature": 0.0},
        "limits": {"max_iterations": 3},
        "skills": {"enabled": False},
        "agent": {"system_message": replay.system_note},
        "compression": compression,
    }


def model_config(config: KeelConfig, options: RetentionOptions) -> KeelConfig:
    """The config the model is opened with for a run: a window the ceiling fits in (the
    embedded server is started with it), a generation cap that leaves the flush and the
    summary their own budgets (turns and answers ask for less), and a request timeout of at
    least `EVAL_TIMEOUT_S` (a small CPU model on a busy machine can take minutes for one
    full prefill; a timeout would only retry it)."""
    m = config.model
    return apply_overrides(
        config,
        {
            "model": {
                "context_window": max(options.window, options.ceiling_window),
                "max_output_tokens": max(m.max_output_tokens, config.compression.flush_max_tokens),
                "timeout_s": max(m.timeout_s, EVAL_TIMEOUT_S),
            }
        },
    )


def _score(run: ArmRun) -> tuple[ScoredQuestion, ...]:
    sources: dict[RetentionSource, str] = {
        "memory": run.memory_text,
        "summary": run.summary_text,
        "tail": run.tail_text,
    }
    return tuple(
        ScoredQuestion(
            question=a.question,
            answer=a.text,
            f1=answer_f1(a.text, a.question.gold, a.question.category),
            retention=None
            if a.question.category == ADVERSARIAL or not a.question.gold
            else retained(a.question.gold, sources),
        )
        for a in run.answers
    )


def _order(arms: Sequence[RetentionArmName]) -> list[RetentionArmName]:
    """Replaying arms first (the first one fixes the plan), the floor last."""
    return sorted(dict.fromkeys(arms), key=lambda a: (a == "floor", a == "ceiling"))


async def run_retention(
    replay: RetentionReplay,
    config: KeelConfig,
    *,
    model: ModelClient,
    root: Path,
    arms: Sequence[RetentionArmName] = RETENTION_ARMS,
    options: RetentionOptions = RetentionOptions(),
    on_step: Callable[[RetentionArmName, str, int, int], None] = lambda _a, _s, _d, _n: None,
    on_arm: Callable[[RetentionArm], None] = lambda _a: None,
) -> RetentionResult:
    """Run every arm in its own fresh home under `root`, score it and meter its trace.

    `on_step` hears each arm's progress; `on_arm` gets each arm as soon as it is scored.

    Raises:
        ConfigError: the conversation is too short for the window, or only the floor was asked.
    """
    meter = await MeterRun.open()
    # The arms replay the same conversation: identical temperature-0 requests are generated once.
    shared = model if isinstance(model, SharedReplies) else SharedReplies(model)
    plan: ReplayPlan | None = None
    done: list[RetentionArm] = []
    for arm in _order(arms):
        home = root / arm
        cfg = apply_overrides(config, arm_overrides(arm, replay, options))
        need = (
            None
            if plan is None
            else plan.prompt_tokens + options.turn_tokens + 2 * options.answer_tokens + 64
        )
        if arm == "ceiling" and need is not None and need > options.ceiling_window:
            run = ArmRun(
                arm, home, status=f"n/a: does not fit ({need:,} > {options.ceiling_window:,} tokens)"
            )
            done.append(RetentionArm(arm, run, (), CompressionCosts(None, None, None)))
            on_step(arm, run.status or "", 0, 0)
            on_arm(done[-1])
            continue

        def step(text: str, done: int, total: int, name: RetentionArmName = arm) -> None:
            on_step(name, text, done, total)

        mark = len(shared.latencies)
        run, made = await run_arm(
            arm,
            replay,
            cfg,
            model=shared,
            home=home,
            plan=plan,
            window=options.window,
            answer_tokens=options.answer_tokens,
            max_questions=options.questions,
            replay_lines=arm != "floor",
            on_step=step,
        )
        plan = plan or made
        costs, _ = await compression_costs(
            run.trace_path, meter=meter, sims=options.sims, shared=shared.latencies[mark:]
        )
        done.append(RetentionArm(arm, run, _score(run), costs))
        on_arm(done[-1])
    assert plan is not None  # run_arm raises before a run without one
    return RetentionResult(replay.name, plan, options, tuple(done))


def where_counts(arm: RetentionArm) -> dict[str, int]:
    """How many answers survived in each source."""
    return {s: arm.survived_in(s) for s in RETENTION_SOURCES}
