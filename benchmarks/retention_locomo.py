"""Does the flush keep what matters through a long session? `keel eval retention`, long form.

Each arm (default `off` and `memory_only_chunked`, keel's default flush; `forced`,
`background`, ... with `--arms`) replays the same lines into a fresh keel home through a small window and compresses for real, again and again
(`--compressions`, default 3: flush, summary, reload, rebuild, a child session each time);
after every compression it scores what the model can still see — no model call — by
*depth* (compressions since the item was said) and by where it survived (memory, summary,
kept messages). The engine is `harness.experiments.retention` (`longrun`), the CLI's.

Sources:
- `--facts FILE` (the `benchmarks/local_flush_conversations.yaml` format): the fact
  conversations are said first (`--group` per session; by default as few sessions as keep
  each session's facts within a third of the window, so all are said before the first
  compression and every fact is scored at every depth), then LoCoMo lines as filler until
  the compressions have happened; a fact is retained when one unit of what the model sees
  (a memory entry, a summary line, a sentence of a kept message) matches it by the
  local-flush rule. Facts the filler alone matches are left out.
- otherwise LoCoMo (`--data`, first `--conversations`): every non-adversarial question whose
  evidence was said before a compression; retained = token recall of its gold answer.

Printed: per arm and depth, items, mean retained, the paired gain over `off` with its
bootstrap 95% interval, and where items survived; `last` rows are every item after the last
compression. The last line is
`retention_gain <best arm − off after the last compression> ci_low <lower 95% bound>`.

    python benchmarks/retention_locomo.py [--facts FILE] [--compressions 3] [--window 4096]
        [--arms off,memory_only_chunked,...] [--group 4] [--json OUT] [--resume] [--model NAME]

LoCoMo (CC BY-NC 4.0) is read at run time and never copied; `--json` keeps every per-item
outcome (pool runs by concatenating them) and `--resume` continues a run from it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import default_data_dir
from harness.config import KeelConfig, load_config
from harness.experiments.locomo import load_locomo
from harness.experiments.retention.facts import load_facts
from harness.experiments.retention.items import LongReplay, fact_groups, questions_replay
from harness.experiments.retention.longrun import (
    LONG_ARMS,
    LongArmName,
    LongOptions,
    LongState,
    report_lines,
    run_long_retention,
)
from harness.experiments.retention.script import replay_locomo
from harness.experiments.runner import apply_overrides
from harness.models.factory import open_model
from harness.tokens import load_tokenizer

DEFAULT_ARMS = "off,memory_only_chunked"  # keel's default flush against none; what fits 45 minutes on a busy 2-core CPU with the default model


def _replays(args: argparse.Namespace, count: Callable[[str], int]) -> list[LongReplay]:
    convs = load_locomo(args.data)
    if args.facts:
        filler = replay_locomo(convs[0])
        facts = load_facts(args.facts)[: args.conversations]
        return fact_groups(args.facts.stem, facts, filler, group=args.group, count=count, window=args.window)
    return [questions_replay(replay_locomo(c)) for c in convs[: args.conversations or 1]]


def _save(path: Path | None, state: LongState) -> None:
    if path is not None:
        path.write_text(json.dumps(state.to_json(), indent=1) + "\n", encoding="utf-8")


async def _run(cfg: KeelConfig, args: argparse.Namespace, arms: list[LongArmName]) -> LongState:
    tokenizer = await load_tokenizer(cfg.model.tokenizer)
    replays = _replays(args, tokenizer.count)
    for r in replays:
        print(
            f"{r.name}: {len(r.lines)} lines, {len(r.items)} items ({len(r.excluded)} left out)",
            file=sys.stderr,
        )
    state = None
    if args.resume and args.json and args.json.exists():
        state = LongState.from_json(json.loads(args.json.read_text(encoding="utf-8")))
        print(f"resuming: {len(state.arms)} arm run(s) done", file=sys.stderr)
    options = LongOptions(
        window=args.window,
        compressions=args.compressions,
        review_every=args.review_every,
        memory_chars=args.memory_chars or None,
        flush_chunk_tokens=args.chunk_tokens,
    )
    model_cfg = apply_overrides(
        cfg,
        {
            "model": {
                "context_window": max(8192, args.window * 2),
                "timeout_s": 1800.0,
                "max_output_tokens": args.max_output,
            }
        },
    )
    started = time.monotonic()

    def step(replay: str, arm: str, done: int, total: int) -> None:
        if done >= total:
            return
        print(
            f"  [{time.monotonic() - started:5.0f} s] {replay} {arm}: compression {done + 1}/{total}",
            file=sys.stderr,
            flush=True,
        )

    def arm_done(st: LongState) -> None:
        a = st.arms[-1]
        print(
            f"  [{time.monotonic() - started:5.0f} s] {a['replay']} {a['arm']} done in {a['wall_s']} s",
            file=sys.stderr,
            flush=True,
        )
        _save(args.json, st)

    with tempfile.TemporaryDirectory(prefix="keel-retention-") as tmp:
        root = Path(tmp)
        async with open_model(model_cfg, home=root) as model:
            return await run_long_retention(
                replays,
                cfg,
                model=model,
                root=root,
                arms=arms,
                options=options,
                state=state,
                on_step=step,
                on_arm=arm_done,
            )


def report(state: LongState, arms: list[LongArmName]) -> list[str]:
    """The per-depth table, wrong memories, the best arm, and the headline as the last line."""
    return report_lines(state, arms)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--data", type=Path, default=default_data_dir() / "locomo-dev.json")
    p.add_argument("--facts", type=Path, help="a facts file (local-flush conversations format)")
    p.add_argument(
        "--group",
        type=int,
        help="fact conversations per session (0: all in one; default: the fewest sessions whose facts "
        "each fit in a third of the window, so every fact is said before the first compression)",
    )
    p.add_argument(
        "--conversations", type=int, help="the first N conversations (default: LoCoMo 1, facts all)"
    )
    p.add_argument("--compressions", type=int, default=3)
    p.add_argument(
        "--chunk-tokens", type=int, default=512, help="piece size of the memory_only_chunked arm's flush"
    )
    p.add_argument("--window", type=int, default=4096, help="context window of every arm")
    p.add_argument("--review-every", type=int, default=12, help="user lines between background reviews")
    p.add_argument(
        "--memory-chars",
        type=int,
        default=3000,
        help="MEMORY.md and USER.md budgets (0: the config's; default 3000: a facts file holds many users)",
    )
    p.add_argument(
        "--max-output", type=int, default=288, help="the server's cap on any reply (the summaries' length)"
    )
    p.add_argument("--arms", default=DEFAULT_ARMS, help=f"comma-separated, of {','.join(LONG_ARMS)}")
    p.add_argument("--model", help="embedded model name (model.local_model), e.g. smollm2-135m")
    p.add_argument("--config", type=Path, help="a keel config file (default: built-in defaults + KEEL_* env)")
    p.add_argument("--json", type=Path, help="write every per-item outcome here (after each arm)")
    p.add_argument("--resume", action="store_true", help="continue the run in --json")
    p.add_argument(
        "--report", action="store_true", help="print the table of the run in --json (no model), and stop"
    )
    args = p.parse_args(argv)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}; pass --data PATH or set KEEL_DATA_DIR", file=sys.stderr)
        return 2
    arms = [a for a in LONG_ARMS if a in args.arms.split(",")]
    if args.report and args.json:
        state = LongState.from_json(json.loads(args.json.read_text(encoding="utf-8")))
        print("\n".join(report(state, arms)))
        return 0
    cfg = load_config(args.config)
    if args.model:
        cfg = apply_overrides(cfg, {"model": {"local_model": args.model}})
    started = time.monotonic()
    state = anyio.run(_run, cfg, args, arms)
    lines = report(state, arms)
    print("\n".join(["", *lines[:-1], f"wall {time.monotonic() - started:.0f} s", lines[-1]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
