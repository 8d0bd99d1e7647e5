"""Does the flush keep what matters? `keel eval retention` on the LoCoMo dev conversations.

For each conversation, every arm (`off`, `memory_only`, `cache_safe`, `forced`,
`memory_only_no_index`, and the references `ceiling` and `floor`) replays it into a fresh
keel home on the configured model (the embedded one by default), compresses once for real
in a small window, and answers the questions whose evidence the compression removed — the
engine is `harness.experiments.retention`, the same as the CLI's. Printed per arm, pooled
over the conversations' questions:

- retained: token recall of the gold answer in what the model sees after compression
  (memory snapshot, summary, kept messages; adversarial questions excluded);
- F1: LoCoMo's answer F1 (category 5 by its "not mentioned" rule);
- kept: prompt tokens the questions were asked from (mean over conversations);
- flush re-prefill: prompt tokens of the flush request the simulator could not reuse
  (`--sim`, default llamacpp: what the embedded server's single slot does).

The default run (one conversation, at most 8 questions, a 4,096-token window, Qwen2.5-Coder-1.5B)
is sized to finish within 30 minutes on a busy 2-core machine; widen it with
`--conversations`, `--questions`, `--window`. The last line is
`retention_gain <answer retained of the best flush arm minus off>`.

    python benchmarks/retention_locomo.py [--data PATH] [--conversations N] [--questions N]
        [--window N] [--arms a,b,...] [--model NAME] [--json OUT]

LoCoMo (CC BY-NC 4.0) is read at run time and never copied; `--json` writes scores and answers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import default_data_dir
from harness.config import KeelConfig, load_config
from harness.experiments.locomo import load_locomo
from harness.experiments.retention.arms import (
    FLUSH_ARMS,
    RETENTION_ARMS,
    RetentionArm,
    RetentionArmName,
    RetentionOptions,
    RetentionResult,
    model_config,
    run_retention,
)
from harness.experiments.retention.report import arm_figures, retention_json
from harness.experiments.retention.script import replay_locomo
from harness.experiments.runner import apply_overrides
from harness.models.factory import open_model

DEFAULT_QUESTIONS = 8
DEFAULT_WINDOW = 4096


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _pooled(results: list[RetentionResult], arm: str, sim: str) -> dict[str, float | None]:
    arms = [a for r in results for a in r.arms if a.name == arm and a.ran]
    retained = [s.retention.recall for a in arms for s in a.scored if s.retention is not None]
    f1 = [s.f1 for a in arms for s in a.scored]
    figures = [arm_figures(a, sim) for a in arms]
    kept = [float(f.tokens_retained) for f in figures if f.tokens_retained is not None]
    flush = [float(f.flush_reprefilled) for f in figures if f.flush_reprefilled is not None]
    return {
        "retained": _mean(retained),
        "f1": _mean(f1),
        "kept": _mean(kept),
        "flush_reprefilled": _mean(flush),
        "questions": float(len(f1)),
    }


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _report(results: list[RetentionResult], arms: list[RetentionArmName], sim: str) -> float | None:
    print(f"\n{'arm':<22}{'questions':>10}{'retained':>10}{'F1':>7}{'kept':>8}{'flush re-prefill':>18}")
    pooled = {arm: _pooled(results, arm, sim) for arm in arms}
    for arm, p in pooled.items():
        status = next((a.run.status for r in results for a in r.arms if a.name == arm and not a.ran), None)
        notes = sum(1 for r in results for a in r.arms if a.name == arm and a.run.note is not None)
        if p["questions"] == 0 and status:
            print(f"{arm:<22}{status}")
            continue
        print(
            f"{arm:<22}{_fmt(p['questions'], '.0f'):>10}{_fmt(p['retained'], '.3f'):>10}{_fmt(p['f1'], '.3f'):>7}"
            f"{_fmt(p['kept'], ',.0f'):>8}{_fmt(p['flush_reprefilled'], ',.0f'):>18}"
            + (f"  ({notes} conversation(s) did not compress)" if notes else "")
        )
    off = pooled.get("off", {}).get("retained")
    flushes = [p["retained"] for a, p in pooled.items() if a in FLUSH_ARMS and p["retained"] is not None]
    return None if off is None or not flushes else max(flushes) - off


async def _run(
    cfg: KeelConfig, args: argparse.Namespace, arms: list[RetentionArmName]
) -> list[RetentionResult]:
    conversations = load_locomo(args.data)[: args.conversations]
    options = RetentionOptions(
        window=args.window,
        ceiling_window=args.ceiling_window or cfg.model.context_window,
        questions=args.questions,
        answer_tokens=args.answer_tokens,
        turn_tokens=args.turn_tokens,
    )
    results: list[RetentionResult] = []
    with tempfile.TemporaryDirectory(prefix="keel-retention-") as tmp:
        root = Path(tmp)
        async with open_model(model_config(cfg, options), home=root) as model:
            for conv in conversations:
                started = time.monotonic()

                def step(arm: str, text: str, done: int, total: int, sid: str = conv.sample_id) -> None:
                    if args.verbose:
                        print(f"  {sid} {arm}: {text} {done}/{total}", file=sys.stderr, flush=True)

                def arm_done(arm: RetentionArm, sid: str = conv.sample_id) -> None:
                    f = arm_figures(arm, args.sim)
                    print(
                        f"  {sid} {arm.name}: {f.status or f.note or ''} retained {_fmt(f.retained, '.3f')} "
                        f"F1 {_fmt(f.f1, '.3f')} kept {_fmt(f.tokens_retained, ',')} flush re-prefill "
                        f"{_fmt(f.flush_reprefilled, ',')} flush {_fmt(f.flush_s, '.0f')} s summary "
                        f"{_fmt(f.summary_s, '.0f')} s 1st turn {_fmt(f.first_turn_s, '.0f')} s, "
                        f"arm {arm.run.wall_s:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )

                result = await run_retention(
                    replay_locomo(conv),
                    cfg,
                    model=model,
                    root=root / conv.sample_id,
                    arms=arms,
                    options=options,
                    on_step=step,
                    on_arm=arm_done,
                )
                results.append(result)
                print(
                    f"{conv.sample_id}: {len(result.plan.questions)} questions, "
                    f"{time.monotonic() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--data", type=Path, default=default_data_dir() / "locomo-dev.json")
    p.add_argument("--conversations", type=int, default=1, help="the first N conversations (default 1)")
    p.add_argument(
        "--questions", type=int, default=DEFAULT_QUESTIONS, help="per conversation (0: all eligible)"
    )
    p.add_argument(
        "--window", type=int, default=DEFAULT_WINDOW, help="context window of the compressing arms"
    )
    p.add_argument("--ceiling-window", type=int, default=None, help="default: model.context_window")
    p.add_argument("--answer-tokens", type=int, default=24)
    p.add_argument("--turn-tokens", type=int, default=48, help="output cap of the warm and trigger turns")
    p.add_argument("--arms", default=",".join(RETENTION_ARMS))
    p.add_argument("--model", help="embedded model name (model.local_model), e.g. smollm2-135m")
    p.add_argument("--config", type=Path, help="a keel config file (default: built-in defaults + KEEL_* env)")
    p.add_argument("--sim", default="llamacpp", help="simulator for the flush re-prefill column")
    p.add_argument("--json", type=Path, help="write every arm's numbers and answers here")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}; pass --data PATH or set KEEL_DATA_DIR", file=sys.stderr)
        return 2
    arms = [a for a in RETENTION_ARMS if a in args.arms.split(",")]
    cfg = load_config(args.config)
    if args.model:
        cfg = apply_overrides(cfg, {"model": {"local_model": args.model}})
    started = time.monotonic()
    results = anyio.run(_run, cfg, args, arms)
    gain = _report(results, arms, args.sim)
    print(f"\nwall {time.monotonic() - started:.0f} s for {len(results)} conversation(s)")
    if args.json:
        args.json.write_text(
            json.dumps([retention_json(r) for r in results], indent=2) + "\n", encoding="utf-8"
        )
    print(f"retention_gain {_fmt(gain, '.4f')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
