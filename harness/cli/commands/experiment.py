"""`keel run`, `keel scenario list|show|from-locomo`, `keel experiment policies|flush`."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import yaml
from rich.markup import escape
from rich.progress import TaskID
from rich.table import Table

from harness.cli._common import Subparsers, config_from_args, console, noun_parser, verb_parsers
from harness.cli._render import EventPrinter, progress_bars
from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.events import Event
from harness.experiments import (
    BUILTIN_SCENARIOS,
    ArmResult,
    ExperimentKind,
    arm_json,
    resolve_scenario,
    run_experiment,
    run_scenario,
    scenario_from_locomo,
    truncate_scenario,
)
from harness.models.factory import open_model

__all__ = ["register"]


# ------------------------------------------------------------------ keel run


async def _run_scenario(cfg: KeelConfig, args: argparse.Namespace) -> int:
    scenario = await anyio.to_thread.run_sync(resolve_scenario, args.scenario)  # reads a file
    if args.turns:
        scenario = truncate_scenario(scenario, args.turns)
    label = f"run-{scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}".replace("/", "_").replace(":", "_")
    # A scenario seeds memory and writes to it: by default it plays in a home of its own,
    # so running one never adds its entries to the user's real memory.
    home = cfg.resolved_home() if args.use_home else cfg.resolved_home() / "runs" / label
    printer = EventPrinter(console)
    last_turn = [0]

    def show(turn: int, ev: Event) -> None:
        if turn != last_turn[0]:
            last_turn[0] = turn
            console.print(f"[bold cyan]turn {turn}>[/] {escape(scenario.turns[turn - 1].user[:200])}")
        printer(ev)

    if args.scripted:
        result = await run_scenario(scenario, cfg, home=home, label=label, scripted=True, on_event=show)
    else:
        async with open_model(cfg, home=home) as model:
            result = await run_scenario(
                scenario, cfg, home=home, label=label, model=model, scripted=False, on_event=show
            )
    table = Table(title=f"{scenario.name}: {len(result.turns)} turns in {result.wall_s:.1f}s")
    for col in ("turn", "wall s", "model calls", "compressed"):
        table.add_column(col, justify="right")
    for t in result.turns:
        table.add_row(str(t.turn), f"{t.wall_s:.2f}", str(t.requests), "yes" if t.compressed else "")
    console.print(table)
    for p in result.probes:
        console.print(
            f"probe {escape(p.keyword)!r}: memory={'yes' if p.in_memory else 'no'} "
            f"summary={'yes' if p.in_summary else 'no'} answer={'-' if p.in_answer is None else p.in_answer}"
        )
    console.print(f"trace: {escape(str(result.trace_path))}")
    if args.json:
        payload = {
            "scenario": scenario.name,
            "turns": [{"turn": t.turn, "wall_s": t.wall_s, "requests": t.requests} for t in result.turns],
            "trace": str(result.trace_path),
            "flush_saved": list(result.flush_saved),
        }
        await anyio.Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def _run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    return anyio.run(_run_scenario, cfg, args)


# ------------------------------------------------------------------ keel scenario


def _scenario_list(args: argparse.Namespace) -> int:
    for name in sorted(BUILTIN_SCENARIOS):
        s = resolve_scenario(name)
        console.print(
            f"[bold]{name}[/] — {len(s.turns)} turns, {len(s.probes)} probes. {escape(s.description)}"
        )
    return 0


def _scenario_show(args: argparse.Namespace) -> int:
    s = resolve_scenario(args.scenario)
    console.print(f"[bold]{escape(s.name)}[/]: {escape(s.description)}")
    console.print(
        f"turns {len(s.turns)}, probes {len(s.probes)}, forced compressions "
        f"{sum(t.compress for t in s.turns)}, out-of-band writes {sum(len(t.memory_writes) for t in s.turns)}"
    )
    for i, t in enumerate(s.turns[: args.head], 1):
        console.print(f"  {i:>3}. {escape(t.user[:120])}")
    return 0


def _from_locomo(args: argparse.Namespace) -> int:
    scenario = scenario_from_locomo(Path(args.path), args.sample_id, sessions=args.sessions)
    text = yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    if args.out == "-":
        console.print(text, markup=False, highlight=False, end="")
        return 0
    out = (
        Path(args.out)
        if args.out
        else config_from_args(args).resolved_home() / "scenarios" / f"{args.sample_id}.yaml"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    console.print(
        f"wrote {escape(str(out))}: {len(scenario.turns)} turns, {len(scenario.probes)} probes "
        "(LoCoMo is CC BY-NC 4.0: keep this file out of public repositories)"
    )
    return 0


# ------------------------------------------------------------------ keel experiment


def _table(kind: str, results: list[ArmResult], scripted: bool) -> Table:
    sims = list(results[0].steady) if results else []
    table = Table(title=f"experiment {kind}" + (" (scripted model)" if scripted else ""))
    table.add_column("arm")
    for s in sims:
        table.add_column(f"{s} steady", justify="right")
    table.add_column("ideal overall", justify="right")
    table.add_column("re-prefilled (llamacpp)", justify="right")
    table.add_column("est. cost $", justify="right")
    table.add_column("median turn s", justify="right")
    table.add_column("retained mem/sum/ans", justify="right")
    for r in results:
        cost = r.report.totals.get("anthropic") or r.report.totals.get(sims[0])
        probes = r.run.probes
        answered = [p for p in probes if p.in_answer is not None]
        retained = (
            f"{sum(p.in_memory for p in probes)}/{sum(p.in_summary for p in probes)}/"
            + (f"{sum(bool(p.in_answer) for p in answered)}" if answered else "-")
            + f" of {len(probes)}"
        )
        reprefill = r.reprefilled("llamacpp") if "llamacpp" in r.report.totals else 0
        table.add_row(
            r.arm.label,
            *[f"{r.steady[s] * 100:.2f}%" for s in sims],
            f"{r.report.totals['ideal'].hit_ratio * 100:.2f}%" if "ideal" in r.report.totals else "-",
            f"{reprefill:,}",
            "-" if cost is None or cost.cost is None else f"{cost.cost:.4f}",
            f"{r.median_turn_s:.3f}",
            retained,
        )
    return table


def _plot(path: Path, results: list[ArmResult]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError("plots need matplotlib: pip install -e '.[plot]'") from exc
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
    for r in results:
        cum_prompt = cum_reused = 0
        xs: list[int] = []
        ys: list[float] = []
        for req in r.report.requests:
            cum_prompt += req.prompt_tokens
            cum_reused += req.sims["ideal"].reusable if "ideal" in req.sims else 0
            xs.append(req.index)
            ys.append(cum_prompt - cum_reused)
        left.plot(xs, ys, label=r.arm.label)
        right.plot([t.turn for t in r.run.turns], [t.wall_s for t in r.run.turns], label=r.arm.label)
    left.set_title("cumulative tokens a cache could not reuse (ideal)")
    left.set_xlabel("request")
    right.set_title("wall time per turn (s)")
    right.set_xlabel("turn")
    left.legend()
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def _experiment(cfg: KeelConfig, kind: ExperimentKind, args: argparse.Namespace) -> int:
    scenario = await anyio.to_thread.run_sync(resolve_scenario, args.scenario)  # reads a file
    if args.turns:
        scenario = truncate_scenario(scenario, args.turns)
    root = (
        Path(args.out)
        if args.out
        else cfg.resolved_home() / "experiments" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    scripted = not args.real
    # The scripted model has no price of its own: show what the traffic would cost at a
    # well-known list price unless the user picked one.
    price = args.price or ("claude-sonnet-4-5" if scripted and "claude-sonnet-4-5" in cfg.prices else None)
    with progress_bars() as progress:
        tasks: dict[str, TaskID] = {}

        def tick(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.update(tasks[label], completed=done)

        if scripted:
            results = await run_experiment(
                kind, scenario, cfg, root=root, scripted=True, price=price, progress=tick
            )
        else:
            async with open_model(cfg, home=root) as model:
                results = await run_experiment(
                    kind,
                    scenario,
                    cfg,
                    root=root,
                    scripted=False,
                    model=model,
                    price=price,
                    progress=tick,
                )
    console.print(_table(kind, results, scripted))
    if price:
        console.print(f"[dim]costs at {escape(price)} list prices (config `prices`)[/]")
    console.print(f"[dim]runs and traces under {escape(str(root))}[/]")
    if args.json:
        payload = {
            "experiment": kind,
            "scenario": scenario.name,
            "scripted": scripted,
            "arms": [arm_json(r) for r in results],
        }
        await anyio.Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        console.print(f"JSON: {escape(args.json)}")
    if args.plot:
        await anyio.to_thread.run_sync(_plot, Path(args.plot), results)
        console.print(f"plot: {escape(args.plot)}")
    return 0


def _experiment_cmd(kind: ExperimentKind) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        cfg = config_from_args(args)
        return anyio.run(_experiment, cfg, kind, args)

    return run


def register(sub: Subparsers) -> None:
    run = noun_parser(sub, "run")
    run.add_argument("scenario", help="a scenario file (YAML/JSON) or a built-in name (keel scenario list)")
    run.add_argument(
        "--scripted", action="store_true", help="play the scenario's scripted replies (no model)"
    )
    run.add_argument("--turns", type=int, help="only the first N turns")
    run.add_argument("--json", metavar="OUT", help="write per-turn results as JSON")
    run.add_argument(
        "--use-home",
        action="store_true",
        help="play in the keel home itself (its memory, sessions, skills) instead of <home>/runs/<run>",
    )
    run.set_defaults(handler=_run)

    verbs = verb_parsers(sub, "scenario")
    verbs.add_parser("list", help="the built-in scenarios").set_defaults(handler=_scenario_list)
    show = verbs.add_parser("show", help="summarize a scenario")
    show.add_argument("scenario")
    show.add_argument("--head", type=int, default=10, help="user turns to print")
    show.set_defaults(handler=_scenario_show)
    loc = verbs.add_parser("from-locomo", help="build a scenario from a LoCoMo conversation (at run time)")
    loc.add_argument("path", help="a LoCoMo JSON file, e.g. ../shared/data/locomo-dev.json")
    loc.add_argument("sample_id", help="the conversation's sample_id, e.g. conv-26")
    loc.add_argument("--sessions", type=int, help="only the first N dated sessions")
    loc.add_argument("--out", help="output file ('-' for stdout; default <home>/scenarios/<id>.yaml)")
    loc.set_defaults(handler=_from_locomo)

    kinds = verb_parsers(sub, "experiment", title="experiments", metavar="KIND")
    experiments: tuple[tuple[ExperimentKind, str], ...] = (
        ("policies", "snapshot policies frozen / invalidate_on_write / live"),
        ("flush", "flush modes memory_only / cache_safe / off, recall persistence, slot order"),
    )
    for kind, help_text in experiments:
        p = kinds.add_parser(kind, help=help_text)
        p.add_argument("scenario", help="a scenario file or a built-in name (e.g. synthetic-200)")
        p.add_argument(
            "--real",
            action="store_true",
            help="send the user turns to the configured model "
            "(the embedded one by default) instead of playing scripted replies",
        )
        p.add_argument("--turns", type=int, help="only the first N turns")
        p.add_argument(
            "--price", metavar="MODEL", help="price table entry for cost estimates (config `prices`)"
        )
        p.add_argument("--out", metavar="DIR", help="where the runs go (default <home>/experiments/...)")
        p.add_argument("--json", metavar="OUT", help="write per-arm numbers as JSON")
        p.add_argument("--plot", metavar="OUT", help="write a PNG plot")
        p.set_defaults(handler=_experiment_cmd(kind))
