"""Experiments: one scenario, several configurations, the cache meter's numbers side by side.

Two experiment families (the decisions they measure: docs/architecture.md §8):

- `policies`: snapshot policies `frozen`, `invalidate_on_write`, `live`.
- `flush`: flush modes `memory_only`, `cache_safe`, `off`; plus recall persistence off and a
  "memory last" slot order (both with the default flush), with the holographic provider on so
  there is recall to persist.

For each arm the scenario runs in its own fresh home; its trace is metered. The *steady*
hit ratio counts turn requests only, leaving out the first request of the run and the first
request after each compression (nothing can be cached there by construction); the overall
ratio counts everything, side calls (flush, summary) included.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio.to_thread
from pydantic import JsonValue

from harness.cachemeter import MeterReport, MeterRun, SimName
from harness.config import KeelConfig
from harness.experiments.runner import Progress, RunResult, apply_overrides, run_scenario
from harness.experiments.scenarios.spec import Scenario
from harness.models.base import ModelClient
from harness.trace import TraceRecord, read_trace

__all__ = ["Arm", "ArmResult", "ExperimentKind", "arm_json", "arms_for", "run_experiment", "steady_ratio"]

ExperimentKind = Literal["policies", "flush"]
DEFAULT_SIMS: tuple[SimName, ...] = ("ideal", "vllm", "llamacpp", "openai", "anthropic")


@dataclass(frozen=True, slots=True)
class Arm:
    label: str
    overrides: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class ArmResult:
    arm: Arm
    run: RunResult
    report: MeterReport
    steady: dict[str, float]
    """Steady-state token hit ratio per simulator (turn requests, see the module doc)."""

    @property
    def median_turn_s(self) -> float:
        return statistics.median(t.wall_s for t in self.run.turns) if self.run.turns else 0.0

    def reprefilled(self, sim: str) -> int:
        """Prompt tokens the simulator could not reuse, over the whole run."""
        t = self.report.totals[sim]
        return t.prompt_tokens - t.reusable


def arms_for(kind: ExperimentKind) -> list[Arm]:
    if kind == "policies":
        return [Arm(p, {"memory": {"snapshot_policy": p}}) for p in ("frozen", "invalidate_on_write", "live")]
    holo: dict[str, JsonValue] = {"memory": {"provider": "holographic"}}
    memory_last: list[JsonValue] = [
        "identity",
        "tool_guidance",
        "provider",
        "system_message",
        "skills",
        "context_files",
        "session",
        "memory",
        "user",
    ]
    return [
        Arm("memory_only", {**holo, "compression": {"flush": "memory_only"}}),
        Arm("cache_safe", {**holo, "compression": {"flush": "cache_safe"}}),
        Arm("off", {**holo, "compression": {"flush": "off"}}),
        Arm("recall_not_persisted", {**holo, "recall": {"persist": False}}),
        Arm("memory_last", {**holo, "prompt": {"slot_order": memory_last}}),
    ]


def steady_ratio(report: MeterReport, sim: str) -> float:
    """Hit ratio over turn requests, minus the first one and the first after each compression."""
    prompt = reused = 0
    last_session: str | None = None
    first = True
    for r in report.requests:
        if r.purpose != "turn":
            continue
        switched = last_session is not None and r.session_id != last_session
        last_session = r.session_id
        if first or switched:
            first = False
            continue
        prompt += r.prompt_tokens
        reused += r.sims[sim].reusable
    return reused / prompt if prompt else 0.0


async def run_experiment(
    kind: ExperimentKind,
    scenario: Scenario,
    config: KeelConfig,
    *,
    root: Path,
    scripted: bool,
    model: ModelClient | None = None,
    sims: Sequence[SimName] = DEFAULT_SIMS,
    price: str | None = None,
    arms: Sequence[Arm] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[ArmResult]:
    """Run every arm of an experiment and meter each trace."""
    meter = await MeterRun.open(prices=config.prices, price=price)
    results: list[ArmResult] = []
    for arm in arms or arms_for(kind):
        cfg = apply_overrides(config, arm.overrides)

        def tick(done: int, total: int, label: str = arm.label) -> None:
            if progress is not None:
                progress(label, done, total)

        per_turn: Progress = tick
        run = await run_scenario(
            scenario,
            cfg,
            home=root / arm.label,
            label=arm.label,
            model=model,
            scripted=scripted,
            progress=per_turn,
        )
        records = await anyio.to_thread.run_sync(_read_all, run.trace_path)
        report = await meter.report_async(records, simulators=sims)
        results.append(ArmResult(arm, run, report, {s: steady_ratio(report, s) for s in sims}))
    return results


def _read_all(path: Path) -> list[TraceRecord]:
    return list(read_trace(path))


def arm_json(result: ArmResult) -> dict[str, JsonValue]:
    """One arm as the `--json` output documents it."""
    report = result.report
    return {
        "label": result.arm.label,
        "overrides": result.arm.overrides,
        "hit_ratio": {s: t.hit_ratio for s, t in report.totals.items()},
        "steady_hit_ratio": dict(result.steady),
        "prompt_tokens": {s: t.prompt_tokens for s, t in report.totals.items()},
        "reused_tokens": {s: t.reusable for s, t in report.totals.items()},
        "cost_usd": {s: t.cost for s, t in report.totals.items()},
        "by_purpose": {
            p: {"reused_tokens": dict(t.reusable), "cost_usd": dict(t.cost), "prompt_tokens": t.prompt_tokens}
            for p, t in report.by_purpose.items()
        },
        "turns": len(result.run.turns),
        "requests": len(report.requests),
        "wall_s": result.run.wall_s,
        "median_turn_s": result.median_turn_s,
        "compressions": result.run.compressions,
        "flush_saved": list(result.run.flush_saved),
        "retention": [
            {
                "fact": p.fact,
                "in_memory": p.in_memory,
                "in_summary": p.in_summary,
                "in_answer": p.in_answer,
            }
            for p in result.run.probes
        ],
        "trace": str(result.run.trace_path),
    }
