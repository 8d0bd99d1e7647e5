"""One arm of the long-session replay: many real compressions, scored after each.

The lines go in with `Session.inject` (persisted and searchable, no model call). Whenever the
prompt reaches the compression threshold, the session compresses for real
(`Session.compress`: flush, summary, reload, rebuild, and the child session of the
lineage), and right after it the eval takes a `Snapshot` of what the model can still see —
the memory snapshot in the rebuilt system prompt, the summary message, the kept messages.
It stops after `compressions` of them.

Which lines the compressions follow is fixed by the first arm that runs (`LongPlan`) and
reused by the others, so every arm compresses the same middles: the summaries are the same
requests (shared across arms by `SharedReplies`), items have the same depths, and the arms
differ only in what they save. A background review (arms with `review_every`) runs after
every `review_every`-th user line, at the same lines in every arm, over the lines since the
previous review.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.compress.plan import effective_threshold
from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.events import FlushEntry
from harness.experiments.demo import compression_runs
from harness.experiments.retention.items import LongReplay
from harness.experiments.retention.script import ScriptLine
from harness.loop.session import Session
from harness.models.base import ModelClient
from harness.types import Message
from harness.wiring import SessionOptions, open_session

__all__ = ["LongPlan", "Snapshot", "run_long_arm"]

MIN_LINES_BETWEEN = 4
"""Lines injected after a compression before the next may run (the tail must grow first)."""


@dataclass(frozen=True, slots=True)
class LongPlan:
    """Where the compressions happen: after `lines[: n]` for each n in `compress_after`."""

    compress_after: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the model can see right after one compression."""

    compression: int
    """1 for the first compression of the session."""
    after_line: int
    """Lines injected before it (items said at an index below this were in the transcript)."""
    memory: str
    summary: str
    tail: str
    tokens: int
    saved: tuple[str, ...]
    """Memory entries written since the previous snapshot (flush and reviews)."""
    refused: tuple[str, ...]
    """Candidate entries refused since the previous snapshot, with their reasons."""
    flush_s: float | None
    summary_s: float | None
    session_id: str
    parent_session_id: str | None


@dataclass(slots=True)
class _Writes:
    saved: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def add(self, entries: tuple[FlushEntry, ...]) -> None:
        for e in entries:
            if e.saved:
                self.saved.append(f"{e.target}: {e.content}")
            else:
                self.refused.append(f"{e.content} — {e.reason}")


def _line(line: ScriptLine) -> Message:
    return Message(role=line.role, content=line.content)


async def _compress(session: Session, writes: _Writes, n: int, after: int) -> Snapshot | None:
    events = await session.compress()
    runs = compression_runs(events, after_turn=session.turn, forced=True, wall_s=0.0)
    run = runs[-1] if runs else None
    if run is None or run.skipped is not None:
        return None
    writes.add(run.entries)
    prompt = session.prompt
    snap = Snapshot(
        compression=n,
        after_line=after,
        memory=f"{prompt.slot_text('memory')}\n{prompt.slot_text('user')}".strip(),
        summary="\n".join(m.content for m in session.transcript if m.summary),
        tail="\n".join(m.content for m in session.transcript if not m.summary),
        tokens=session.estimate_prompt_tokens(),
        saved=tuple(writes.saved),
        refused=tuple(writes.refused),
        flush_s=run.flush_s if run.flushed else None,
        summary_s=run.summary_s,
        session_id=session.session_id,
        parent_session_id=session.parent_session_id,
    )
    writes.saved.clear()
    writes.refused.clear()
    return snap


def _due(session: Session, threshold: int, i: int, last: int, plan: LongPlan | None, n: int) -> bool:
    """A compression is due before line `i` (`n`: planned compressions tried so far)."""
    if plan is not None:
        return n < len(plan.compress_after) and plan.compress_after[n] == i
    return i - last >= MIN_LINES_BETWEEN and session.estimate_prompt_tokens() >= threshold


async def run_long_arm(
    replay: LongReplay,
    cfg: KeelConfig,
    *,
    model: ModelClient,
    home: Path,
    trace_path: Path,
    compressions: int,
    plan: LongPlan | None,
    review_every: int = 0,
    on_step: Callable[[int, int], None] = lambda _d, _n: None,
) -> tuple[list[Snapshot], LongPlan]:
    """Replay `replay` in a fresh `home` through `compressions` compressions.

    Args:
        plan: the compression points of an earlier arm; None: compress at the threshold
            (and return the points as the plan for the other arms).
        review_every: a memory review after every this many user lines (0: none).
        on_step: told (compressions done, compressions wanted) as the replay goes.

    An arm that follows a plan returns the snapshots it has when one of its compressions did
    not replace anything (its items are then scored only where it did compress).

    Raises:
        ConfigError: the lines run out before `compressions` compressions (first arm).
    """
    threshold = effective_threshold(cfg.compression.threshold, cfg.model.context_window)
    snaps: list[Snapshot] = []
    points: list[int] = []
    writes = _Writes()
    user_lines = last = tried = 0
    async with open_session(
        cfg, SessionOptions(model=model, home=home, trace_path=trace_path, source="eval")
    ) as session:
        for i, line in enumerate(replay.lines):
            if len(snaps) == compressions:
                break
            if _due(session, threshold, i, last, plan, tried):
                on_step(len(snaps), compressions)
                # numbered by the plan's position, so a skipped one leaves a gap, not a shift
                snap = await _compress(session, writes, tried + 1, i)
                last = i
                if plan is not None:
                    tried += 1
                if snap is not None:
                    snaps.append(snap)
                    if plan is None:
                        points.append(i)
                        tried += 1
                if len(snaps) == compressions:
                    break
            await session.inject([_line(line)])
            if line.role == "user":
                user_lines += 1
                if review_every and user_lines % review_every == 0:
                    outcome = await session.review_memory(turns=review_every)
                    if outcome is not None:
                        writes.add(outcome.entries)
    if len(snaps) < compressions and plan is None:
        raise ConfigError(
            f"{replay.name}: only {len(snaps)} of {compressions} compressions before the lines ran out; "
            "use a smaller window, fewer --compressions, or more filler"
        )
    on_step(len(snaps), compressions)
    return snaps, plan or LongPlan(tuple(points))
