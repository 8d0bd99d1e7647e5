"""The retention eval's results as JSON, and the per-arm figures the table and benchmark show."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from harness.experiments.locomo import LOCOMO_CATEGORIES
from harness.experiments.retention.arms import RetentionArm, RetentionResult, where_counts

__all__ = ["ArmFigures", "arm_figures", "retention_json"]


@dataclass(frozen=True, slots=True)
class ArmFigures:
    """One arm's headline numbers (None where the arm did not run or has no such call)."""

    name: str
    status: str | None
    note: str | None
    retained: float | None
    f1: float | None
    tokens_retained: int | None
    flush_reprefilled: int | None
    first_turn_reprefilled: int | None
    flush_reusable_share: float | None
    flush_s: float | None
    summary_s: float | None
    first_turn_s: float | None
    where: dict[str, int]
    saved: int
    claimed: int


def arm_figures(arm: RetentionArm, sim: str) -> ArmFigures:
    """The numbers of one arm, costs under simulator `sim`."""
    c = arm.costs
    comp = arm.run.compression
    entries = comp.entries if comp is not None else ()
    return ArmFigures(
        name=arm.name,
        status=arm.run.status,
        note=arm.run.note,
        retained=arm.retained() if arm.ran else None,
        f1=arm.f1() if arm.ran else None,
        tokens_retained=arm.run.tokens_retained if arm.ran else None,
        flush_reprefilled=None if c.flush is None else c.flush.reprefilled.get(sim),
        first_turn_reprefilled=None if c.first_turn is None else c.first_turn.reprefilled.get(sim),
        flush_reusable_share=None if c.flush is None else c.flush.reusable_share(sim),
        flush_s=None if c.flush is None else c.flush.wall_s,
        summary_s=None if c.summary is None else c.summary.wall_s,
        first_turn_s=arm.run.first_turn_s if c.first_turn is None else c.first_turn.wall_s,
        where=where_counts(arm),
        saved=sum(1 for e in entries if e.saved),
        claimed=sum(1 for e in entries if e.action == "claimed"),
    )


def _by_category(arm: RetentionArm) -> dict[str, JsonValue]:
    cats = sorted({s.question.category for s in arm.scored})
    return {
        LOCOMO_CATEGORIES.get(c, str(c)): {
            "questions": sum(1 for s in arm.scored if s.question.category == c),
            "answer_retained": arm.retained(c),
            "answer_f1": arm.f1(c),
        }
        for c in cats
    }


def _arm_json(arm: RetentionArm) -> dict[str, JsonValue]:
    comp = arm.run.compression
    return {
        "arm": arm.name,
        "status": arm.run.status,
        "note": arm.run.note,
        "answer_retained": arm.retained(),
        "answer_f1": arm.f1(),
        "by_category": _by_category(arm),
        "survived_in": dict(where_counts(arm)),
        "tokens_retained": arm.run.tokens_retained,
        "compression": None
        if comp is None
        else {
            "tokens_before": comp.tokens_before,
            "tokens_after": comp.tokens_after,
            "flush_s": comp.flush_s,
            "summary_s": comp.summary_s,
            "skipped": comp.skipped,
            "flush_entries": [
                {
                    "target": e.target,
                    "action": e.action,
                    "content": e.content,
                    "saved": e.saved,
                    "reason": e.reason,
                }
                for e in comp.entries
            ],
        },
        "first_turn_s": arm.run.first_turn_s,
        "costs": arm.costs.to_json(),
        "wall_s": arm.run.wall_s,
        "trace": None if arm.run.trace_path is None else str(arm.run.trace_path),
        "answers": [
            {
                "question": s.question.question,
                "category": s.question.category,
                "gold": s.question.gold,
                "answer": s.answer,
                "f1": s.f1,
                "retained": None if s.retention is None else s.retention.recall,
                "where": [] if s.retention is None else list(s.retention.where),
            }
            for s in arm.scored
        ],
    }


def retention_json(result: RetentionResult) -> dict[str, JsonValue]:
    """The whole run as the `--json` output documents it."""
    o = result.options
    return {
        "replay": result.replay,
        "window": o.window,
        "ceiling_window": o.ceiling_window,
        "questions": len(result.plan.questions),
        "plan": {
            "warm_line": result.plan.warm_at,
            "trigger_line": result.plan.trigger_at,
            "compressed_dialog_ids": list[JsonValue](sorted(result.plan.middle)),
            "prompt_tokens_at_trigger": result.plan.prompt_tokens,
        },
        "retention_gain": result.retention_gain(),
        "arms": [_arm_json(a) for a in result.arms],
    }
