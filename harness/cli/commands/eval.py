"""`keel eval retention SOURCE`: facts across compression, arm by arm, on the configured model."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
from rich.markup import escape
from rich.progress import TaskID
from rich.table import Table

from harness.cli._common import Subparsers, config_from_args, console, err_console, verb_parsers
from harness.cli._render import progress_bars
from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.experiments.locomo import LOCOMO_CATEGORIES
from harness.experiments.retention.arms import (
    RETENTION_ARMS,
    RetentionArmName,
    RetentionOptions,
    RetentionResult,
    model_config,
    run_retention,
)
from harness.experiments.retention.facts import load_facts
from harness.experiments.retention.items import (
    LongReplay,
    fact_groups,
    questions_replay,
)
from harness.experiments.retention.longrun import (
    LONG_ARMS,
    LongArmName,
    LongOptions,
    LongState,
    report_lines,
    run_long_retention,
)
from harness.experiments.retention.report import ArmFigures, arm_figures, retention_json
from harness.experiments.retention.scores import RETENTION_SOURCES
from harness.experiments.retention.script import load_replay
from harness.models.factory import open_model
from harness.tokens import load_tokenizer

__all__ = ["category_table", "default_sim", "register", "retention_table"]


def default_sim(config: KeelConfig) -> str:
    """The simulator that matches the configured provider's cache."""
    return {"local": "llamacpp", "openai": "openai", "anthropic": "anthropic"}[config.model.provider]


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def retention_table(result: RetentionResult, sim: str) -> Table:
    """The per-arm table: scores, where answers survived, and the compression's costs."""
    table = Table(
        title=f"retention on {result.replay}: {len(result.plan.questions)} questions whose evidence was "
        f"compressed; window {result.options.window:,}; costs under '{sim}'"
    )
    for col in (
        "arm",
        "retained",
        "F1",
        "in mem/sum/tail",
        "tokens kept",
        "flush re-prefill",
        "flush reuse",
        "1st turn re-prefill",
        "flush s",
        "summary s",
        "1st turn s",
        "saved/claimed",
    ):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for arm in result.arms:
        f: ArmFigures = arm_figures(arm, sim)
        if f.status is not None:
            table.add_row(f.name, escape(f.status), *["" for _ in range(10)])
            continue
        table.add_row(
            f.name if f.note is None else f"{f.name} [yellow](!)[/]",
            _num(f.retained, ".0%"),
            _num(f.f1, ".2f"),
            "/".join(str(f.where[s]) for s in RETENTION_SOURCES),
            _num(f.tokens_retained, ","),
            _num(f.flush_reprefilled, ","),
            _num(f.flush_reusable_share, ".0%"),
            _num(f.first_turn_reprefilled, ","),
            _num(f.flush_s, ".1f"),
            _num(f.summary_s, ".1f"),
            _num(f.first_turn_s, ".1f"),
            f"{f.saved}/{f.claimed}" if arm.run.compression is not None else "-",
        )
    return table


def category_table(result: RetentionResult) -> Table:
    """Answer retained / F1 per LoCoMo category (rows) and arm (columns)."""
    table = Table(title="per category: answer retained / F1 (questions)")
    table.add_column("category")
    ran = [a for a in result.arms if a.ran]
    for arm in ran:
        table.add_column(arm.name, justify="right")
    for cat in sorted({q.category for q in result.plan.questions}):
        n = sum(1 for q in result.plan.questions if q.category == cat)
        cells = [f"{_num(a.retained(cat), '.0%')} / {_num(a.f1(cat), '.2f')}" for a in ran]
        table.add_row(f"{LOCOMO_CATEGORIES.get(cat, str(cat))} ({n})", *cells)
    return table


def _plot(path: Path, result: RetentionResult, sim: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for arm in result.arms:
        f = arm_figures(arm, sim)
        if f.tokens_retained is None or f.retained is None:
            continue
        ax.scatter([f.tokens_retained], [f.retained * 100])
        ax.annotate(f.name, (f.tokens_retained, f.retained * 100), textcoords="offset points", xytext=(5, 4))
    ax.set_xlabel("prompt tokens the questions were asked from")
    ax.set_ylabel("answer retained (%)")
    ax.set_title(f"retention on {result.replay}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _arms(text: str) -> list[RetentionArmName]:
    chosen: list[RetentionArmName] = []
    for name in (a.strip() for a in text.split(",") if a.strip()):
        match = next((a for a in RETENTION_ARMS if a == name), None)
        if match is None:
            raise ConfigError(f"unknown arm {name!r}; choose from {', '.join(RETENTION_ARMS)}")
        chosen.append(match)
    if not chosen:
        raise ConfigError(f"--arms is empty; choose from {', '.join(RETENTION_ARMS)}")
    return chosen


def _data(args: argparse.Namespace) -> Path | None:
    if args.data:
        return Path(args.data)
    env = os.environ.get("KEEL_DATA_DIR")
    return Path(env) / "locomo-dev.json" if env else None


async def _retention(cfg: KeelConfig, args: argparse.Namespace) -> int:
    replay = await anyio.to_thread.run_sync(
        lambda: load_replay(args.source, data=_data(args), conversation=args.conversation)
    )
    arms = _arms(args.arms or ",".join(RETENTION_ARMS))
    options = RetentionOptions(
        window=args.window,
        ceiling_window=args.ceiling_window or cfg.model.context_window,
        questions=args.questions,
        answer_tokens=args.answer_tokens,
    )
    root = (
        Path(args.out)
        if args.out
        else cfg.resolved_home() / "evals" / f"retention-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    sim = args.sim or default_sim(cfg)
    with progress_bars() as progress:
        tasks: dict[str, TaskID] = {a: progress.add_task(f"{a}: waiting", total=None) for a in arms}

        def step(arm: str, text: str, done: int, total: int) -> None:
            progress.update(tasks[arm], description=f"{arm}: {text}", completed=done, total=total or None)

        async with open_model(model_config(cfg, options), home=root) as model:
            result = await run_retention(
                replay, cfg, model=model, root=root, arms=arms, options=options, on_step=step
            )
    console.print(retention_table(result, sim))
    for arm in result.arms:
        if arm.run.note is not None:
            console.print(
                f"[yellow](!) {arm.name}: {escape(arm.run.note)} — its scores are not a compression's[/]"
            )
    console.print(category_table(result))
    gain = result.retention_gain()
    console.print(
        "retained: share of each gold answer's (stemmed) tokens still visible after compression; F1: LoCoMo's "
        "answer score; in mem/sum/tail: answers that survived in memory, the summary, the kept messages"
    )
    if gain is not None:
        console.print(f"retention gain (best flush arm − off): {gain * 100:+.1f} points")
    console.print(f"[dim]homes and traces under {escape(str(root))}[/]")
    if args.json:
        text = json.dumps(retention_json(result), indent=2) + "\n"
        await anyio.Path(args.json).write_text(text, encoding="utf-8")
        console.print(f"JSON: {escape(args.json)}")
    if args.plot:
        if await anyio.to_thread.run_sync(_plot, Path(args.plot), result, sim):
            console.print(f"plot: {escape(args.plot)}")
        else:
            err_console.print("no plot: matplotlib is not installed (pip install -e '.[plot]')")
    return 0


def _long_arms(text: str) -> list[LongArmName]:
    names = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [n for n in names if n not in LONG_ARMS]
    if unknown or not names:
        what = f"unknown arm {unknown[0]!r}" if unknown else "--arms is empty"
        raise ConfigError(f"{what}; choose from {', '.join(LONG_ARMS)}")
    return [a for a in LONG_ARMS if a in names]


def _long_replays(args: argparse.Namespace, count: Callable[[str], int]) -> list[LongReplay]:
    replay = load_replay(args.source, data=_data(args), conversation=args.conversation)
    if args.facts:
        facts = load_facts(Path(args.facts))
        return fact_groups(
            Path(args.facts).stem, facts, replay, group=args.group, count=count, window=args.window
        )
    return [questions_replay(replay)]


async def _long(cfg: KeelConfig, args: argparse.Namespace) -> int:
    """The long-session replay: K compressions per arm, scored after each (no model answers)."""
    tokenizer = await load_tokenizer(cfg.model.tokenizer)
    replays = await anyio.to_thread.run_sync(_long_replays, args, tokenizer.count)
    arms = _long_arms(args.arms or "off,memory_only_chunked,forced,background")
    json_path = anyio.Path(args.json) if args.json else None
    state = None
    if args.resume and json_path is not None and await json_path.exists():
        state = LongState.from_json(json.loads(await json_path.read_text(encoding="utf-8")))
    root = (
        Path(args.out)
        if args.out
        else cfg.resolved_home() / "evals" / f"retention-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    options = LongOptions(window=args.window, compressions=args.compressions, review_every=args.review_every)
    model_cfg = model_config(cfg, RetentionOptions(window=args.window, ceiling_window=2 * args.window))
    saving: list[str] = []

    def step(replay: str, arm: str, done: int, total: int) -> None:
        err_console.print(f"{escape(replay)} {arm}: compression {done + 1}/{total}")

    def arm_done(st: LongState) -> None:
        saving.append(json.dumps(st.to_json(), indent=1) + "\n")

    async with open_model(model_cfg, home=root) as model:
        for replay in replays:
            state = await run_long_retention(
                [replay],
                cfg,
                model=model,
                root=root,
                arms=arms,
                options=options,
                state=state,
                on_step=step,
                on_arm=arm_done,
            )
            if json_path is not None and saving:
                await json_path.write_text(saving[-1], encoding="utf-8")
    assert state is not None
    lines = report_lines(state, arms)
    console.print(f"[dim]homes and traces under {escape(str(root))}[/]")
    console.print("\n".join(escape(line) for line in lines))
    return 0


def _run(args: argparse.Namespace) -> int:
    handler = _retention if args.answers else _long
    return anyio.run(handler, config_from_args(args), args)


def register(sub: Subparsers) -> None:
    kinds = verb_parsers(sub, "eval", title="evaluations", metavar="KIND")
    p = kinds.add_parser(
        "retention",
        help="does the flush keep what matters? replay a conversation, compress, ask what was compressed",
    )
    p.add_argument(
        "source",
        help="a LoCoMo-format file (e.g. ../shared/data/locomo-dev.json), a conversation id (with --data), "
        "a scenario file or a built-in scenario (keel scenario list)",
    )
    p.add_argument("--data", metavar="PATH", help="the LoCoMo file a conversation id is looked up in")
    p.add_argument(
        "--conversation", metavar="ID", help="which conversation of a LoCoMo file (default: the first)"
    )
    p.add_argument(
        "--arms",
        help=f"comma-separated arms (default: off,memory_only_chunked,forced,background; with --answers all of "
        f"{', '.join(RETENTION_ARMS)}; long-session arms: {', '.join(LONG_ARMS)})",
    )
    p.add_argument("--compressions", type=int, default=3, help="compressions per arm (default 3)")
    p.add_argument(
        "--facts", metavar="FILE", help="plant these facts first (local-flush format); SOURCE is filler"
    )
    p.add_argument(
        "--group",
        type=int,
        help="fact conversations per session (0: all in one; default: the fewest sessions whose facts each "
        "fit in a third of the window, so every fact is said before the first compression)",
    )
    p.add_argument("--review-every", type=int, default=12, help="user lines between background reviews")
    p.add_argument("--resume", action="store_true", help="continue the run whose --json is given")
    p.add_argument(
        "--answers",
        action="store_true",
        help="one compression, then the model answers each question (LoCoMo F1) instead of the fast scoring",
    )
    p.add_argument("--window", type=int, default=4096, help="context window of the compressing arms")
    p.add_argument(
        "--ceiling-window", type=int, help="window the ceiling may fill (default: model.context_window)"
    )
    p.add_argument("--questions", type=int, default=12, help="at most this many questions (0: all eligible)")
    p.add_argument("--answer-tokens", type=int, default=32, help="output cap of each answer")
    p.add_argument("--sim", help="cache simulator for the cost columns (default: the provider's)")
    p.add_argument("--out", metavar="DIR", help="where the arms' homes go (default <home>/evals/...)")
    p.add_argument("--json", metavar="OUT", help="write every number (and each answer) as JSON")
    p.add_argument(
        "--plot", metavar="OUT", help="write a PNG: answer retained vs tokens kept, one point per arm"
    )
    p.set_defaults(handler=_run)
