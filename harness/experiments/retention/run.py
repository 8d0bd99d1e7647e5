"""One arm of the retention eval: replay, compress for real, then ask from what is left.

The replay runs through `open_session`, so everything is the real harness: the configured
model, the memory tool and store, the session store, the trace. Recorded lines go in with
`Session.inject` (persisted and searchable, no model call: generating a reply to each of
hundreds of lines would take hours on a local model). Two lines are real turns:

1. the *warm* turn, once the prompt is past `WARM_FRACTION` of the compression threshold —
   the model really answers, so the server holds the conversation's prefix in its cache
   (and the flush that follows finds it there or not: that is what the cache columns show);
   its reply takes the place of the recorded reply to that line;
2. the *trigger* turn, the first user line once the prompt is over the threshold: its
   model call compresses first — flush, summary, reload, rebuild, lineage: the real code
   paths — and then answers from the compressed context (the first post-compression turn).

Then every chosen question is asked once, independently, from the post-compression context
only: the rebuilt system prompt (with the reloaded memory snapshot), the summary and the kept
messages, plus the question. The request carries the session's own tools with
`tool_choice: none`, so its prefix is the one the next turn would send and the model answers
from context (no recovery search). Answers never enter the transcript.

The `ceiling` arm replays the same lines with compression off (the whole conversation in
context); `floor` replays nothing. Which lines are turns, and so which questions have their
evidence in the compressed middle, is fixed by the first replaying arm (`ReplayPlan`) and
reused by the others, so every arm answers the same questions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.compress.plan import effective_threshold, plan_cut
from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.events import CompressionFinished, Event, UsageReported
from harness.experiments.demo import CompressionRun, compression_runs
from harness.experiments.retention.script import Question, RetentionReplay, ScriptLine, question_prompt
from harness.loop.session import Session
from harness.models.base import ModelClient
from harness.types import Message, ModelRequest
from harness.wiring import SessionOptions, open_session

__all__ = ["WARM_FRACTION", "ArmRun", "ReplayPlan", "ask", "run_arm"]

WARM_FRACTION = 0.6
"""The warm turn runs once the prompt passes this share of the compression threshold."""


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    """Which lines are real turns, and which questions every arm is asked."""

    warm_at: int
    """`lines[warm_at]` is the warm turn (its recorded reply, the next line, is not replayed)."""
    trigger_at: int
    """`lines[trigger_at]` is the trigger turn; the replay ends with it."""
    middle: frozenset[str]
    """Dialog ids of the lines the compression replaces with its summary."""
    questions: tuple[Question, ...]
    """The questions whose evidence lies wholly in `middle`."""
    prompt_tokens: int
    """The prompt size at the trigger turn (what the ceiling must fit)."""


@dataclass(frozen=True, slots=True)
class Answer:
    question: Question
    text: str


@dataclass(slots=True)
class ArmRun:
    """What one arm did and what the model could still see when it answered."""

    arm: str
    home: Path
    trace_path: Path | None = None
    status: str | None = None
    """None when the arm ran; else why not (`n/a: does not fit`)."""
    note: str | None = None
    """Set when an arm that should have compressed did not (why): its scores are not a
    compression's."""
    answers: list[Answer] = field(default_factory=list)
    compression: CompressionRun | None = None
    first_turn_s: float | None = None
    tokens_retained: int = 0
    memory_text: str = ""
    summary_text: str = ""
    tail_text: str = ""
    wall_s: float = 0.0


async def _turn(session: Session, text: str) -> list[Event]:
    async with session.run_turn(text) as stream:
        return [ev async for ev in stream]


async def ask(session: Session, text: str, *, max_tokens: int | None) -> str:
    """One question from the session's current context; the transcript is left as it was."""
    system = session.system.text
    request = ModelRequest(
        system=system,
        messages=(*session.transcript, Message(role="user", content=text)),
        tools=session.tools.specs(),
        tool_choice="none",
        max_tokens=max_tokens,
        temperature=session.settings.temperature,
        purpose="turn",
        stable_prefix_chars=len(system),
    )
    reply, _ = await session.calls.send(request)
    return reply.message.content.strip()


def _as_messages(lines: tuple[ScriptLine, ...]) -> list[Message]:
    return [Message(role=line.role, content=line.content) for line in lines]


async def _advance(session: Session, lines: tuple[ScriptLine, ...], start: int, until: int) -> int:
    """Inject lines from `start` until the prompt reaches `until` tokens and a user line is
    next; return that line's index."""
    i = start
    while i < len(lines) and (session.estimate_prompt_tokens() < until or lines[i].role != "user"):
        await session.inject(_as_messages(lines[i : i + 1]))
        i += 1
    if i >= len(lines):
        raise ConfigError(
            f"the conversation ends before the prompt reaches {until:,} tokens: choose a smaller "
            "--window, or a longer conversation"
        )
    return i


def _choose(
    replay: RetentionReplay, session: Session, trigger: str, threshold: int, cfg: KeelConfig, limit: int
) -> tuple[frozenset[str], tuple[Question, ...]]:
    """Predict the compression's cut exactly as the compressor will make it."""
    messages = [*session.transcript, Message(role="user", content=trigger)]
    c = cfg.compression
    cut = plan_cut(
        messages,
        count=session.estimator.count_message,
        tail_budget=int(threshold * c.tail_ratio),
        protect_first_n=c.protect_first_n,
        protect_last_n=c.protect_last_n,
    )
    by_content = {line.content: line.dia_ids for line in replay.lines}
    middle = frozenset(
        d for m in messages[cut.head_end : cut.tail_start] for d in by_content.get(m.content, ())
    )
    eligible = [q for q in replay.questions if q.evidence and q.evidence <= middle]
    return middle, _spread(eligible, limit)


def _spread(questions: list[Question], limit: int) -> tuple[Question, ...]:
    """At most `limit` questions (0: all), taken in turn from each category, in order."""
    if not limit or len(questions) <= limit:
        return tuple(questions)
    by_category: dict[int, list[Question]] = {}
    for q in questions:
        by_category.setdefault(q.category, []).append(q)
    chosen: list[Question] = []
    while len(chosen) < limit:
        for group in by_category.values():
            if group and len(chosen) < limit:
                chosen.append(group.pop(0))
    return tuple(sorted(chosen, key=lambda q: q.index))


async def _replay(
    session: Session,
    replay: RetentionReplay,
    plan: ReplayPlan | None,
    threshold: int,
    cfg: KeelConfig,
    limit: int,
) -> tuple[ReplayPlan, list[Event]]:
    """Inject, warm turn, inject, trigger turn; returns the plan and the trigger turn's events."""
    lines = replay.lines
    if plan is None:
        warm_at = await _advance(session, lines, 0, int(threshold * WARM_FRACTION))
    else:
        warm_at = plan.warm_at
        await session.inject(_as_messages(lines[:warm_at]))
    await _turn(session, lines[warm_at].content)
    resume = warm_at + 1 + (warm_at + 1 < len(lines) and lines[warm_at + 1].role == "assistant")
    if plan is None:
        trigger_at = await _advance(session, lines, resume, threshold)
        middle, questions = _choose(replay, session, lines[trigger_at].content, threshold, cfg, limit)
        plan = ReplayPlan(warm_at, trigger_at, middle, questions, session.estimate_prompt_tokens())
    else:
        await session.inject(_as_messages(lines[resume : plan.trigger_at]))
    return plan, await _turn(session, lines[plan.trigger_at].content)


def _first_turn_after_compression(events: list[Event]) -> float | None:
    compressed = False
    for ev in events:
        if isinstance(ev, CompressionFinished) and ev.new_session_id is not None:
            compressed = True
        elif compressed and isinstance(ev, UsageReported) and ev.purpose == "turn":
            return ev.latency_s
    return None


def _visible(run: ArmRun, session: Session) -> None:
    """What the model sees now, split by source: memory snapshot, summary, kept messages."""
    prompt = session.prompt
    run.memory_text = f"{prompt.slot_text('memory')}\n{prompt.slot_text('user')}".strip()
    run.summary_text = "\n".join(m.content for m in session.transcript if m.summary)
    run.tail_text = "\n".join(m.content for m in session.transcript if not m.summary)
    run.tokens_retained = session.estimate_prompt_tokens()


async def run_arm(
    arm: str,
    replay: RetentionReplay,
    cfg: KeelConfig,
    *,
    model: ModelClient,
    home: Path,
    plan: ReplayPlan | None,
    window: int,
    answer_tokens: int,
    max_questions: int = 0,
    replay_lines: bool = True,
    on_step: Callable[[str, int, int], None] = lambda _t, _d, _n: None,
) -> tuple[ArmRun, ReplayPlan | None]:
    """Run one arm in `home` (fresh); returns what it did and the plan (made here if None).

    Args:
        window: the context window whose compression threshold decides the turns.
        max_questions: when this arm makes the plan, keep at most this many questions (0: all).
        replay_lines: False for the `floor` arm (no history at all).
        on_step: told about each step: (what, questions answered, questions in all; 0 while
            the conversation replays).

    Raises:
        ConfigError: the conversation is too short for the window, or no plan exists for a
            run that replays nothing.
    """
    run = ArmRun(arm, home, trace_path=home / "traces" / f"{arm}.jsonl")
    threshold = effective_threshold(cfg.compression.threshold, window)
    started = time.monotonic()
    async with open_session(
        cfg, SessionOptions(model=model, home=home, trace_path=run.trace_path, source="eval")
    ) as session:
        if replay_lines:
            on_step("replaying and compressing", 0, 0)
            plan, events = await _replay(session, replay, plan, threshold, cfg, max_questions)
            found = compression_runs(events, after_turn=session.turn - 1, forced=False, wall_s=0.0)
            run.compression = next((c for c in found if c.skipped is None), found[-1] if found else None)
            run.first_turn_s = _first_turn_after_compression(events)
            if cfg.compression.enabled and (run.compression is None or run.compression.skipped is not None):
                why = run.compression.skipped if run.compression is not None else "no compression ran"
                run.note = f"not compressed: {why}"
        if plan is None:
            raise ConfigError("the floor arm needs a replaying arm before it to choose the questions")
        _visible(run, session)
        total = len(plan.questions)
        for n, q in enumerate(plan.questions):
            on_step("asking", n, total)
            run.answers.append(Answer(q, await ask(session, question_prompt(q), max_tokens=answer_tokens)))
        on_step("done", total, total)
    run.wall_s = time.monotonic() - started
    return run, plan
