"""`keel demo`: the main job, on the embedded model with no configuration."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import anyio
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.cli._common import Subparsers, config_from_args, console, err_console
from harness.config import KeelConfig
from harness.events import Event, MemoryWritten, TextDelta
from harness.experiments.demo import DEMO_TURNS, DemoResult, demo_config, run_demo
from harness.models.factory import open_model

__all__ = ["register"]


def _pct(reused: int, prompt: int) -> str:
    return f"{reused / prompt * 100:.0f}%" if prompt else "-"


def _report(result: DemoResult) -> None:
    table = Table(title="frozen snapshot vs live re-read: per-turn wall time and prefix reuse")
    for col, just in (
        ("turn", "right"),
        ("frozen s", "right"),
        ("live s", "right"),
        ("frozen reuse", "right"),
        ("live reuse", "right"),
        ("memory written after the turn", "left"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]  # "left"/"right" are valid
    for f, lv in zip(result.frozen.rows, result.live.rows, strict=False):
        table.add_row(
            str(f.turn),
            f"{f.wall_s:.2f}",
            f"{lv.wall_s:.2f}",
            _pct(f.reused_tokens, f.prompt_tokens),
            _pct(lv.reused_tokens, lv.prompt_tokens),
            escape(f.side_write or ""),
        )
    ft = sum(r.wall_s for r in result.frozen.rows)
    lt = sum(r.wall_s for r in result.live.rows)
    table.add_row(
        "all",
        f"{ft:.1f}",
        f"{lt:.1f}",
        _pct(
            sum(r.reused_tokens for r in result.frozen.rows), sum(r.prompt_tokens for r in result.frozen.rows)
        ),
        _pct(sum(r.reused_tokens for r in result.live.rows), sum(r.prompt_tokens for r in result.live.rows)),
        "",
        style="bold",
    )
    console.print(table)
    console.print(
        "[dim]reuse: prompt tokens the llama.cpp server could keep from the previous request "
        "(cache meter, llamacpp rule); wall time includes generation.[/]"
    )
    c = result.compression
    console.print(
        f"\n[bold]forced compression[/] (frozen run): ~{result.tokens_before:,} → ~{result.tokens_after:,} tokens; "
        f"flush call {c['flush_s']:.1f}s, summary call {c['summary_s']:.1f}s, whole compression {c['total_s']:.1f}s"
    )
    if result.flush_saved:
        console.print("[bold]the flush saved:[/]")
        for entry in result.flush_saved:
            console.print(f"  [green]+ {escape(entry)}[/]")
    else:
        console.print("the flush saved nothing (the model chose not to, or its tool calls were refused)")
    for entry in result.flush_refused:
        console.print(f"  [dim]- refused: {escape(entry)}[/]")
    console.print(
        f"\ntraces: {escape(str(result.frozen.trace_path))}\n        {escape(str(result.live.trace_path))}"
    )
    console.print(f"[dim]see them with: keel cache report {escape(str(result.frozen.trace_path))}[/]")


async def _demo(cfg: KeelConfig, args: argparse.Namespace) -> int:
    home = cfg.resolved_home()
    root = Path(args.out) if args.out else home / "demo" / time.strftime("%Y%m%d-%H%M%S")
    turns = max(1, min(args.turns, len(DEMO_TURNS)))
    console.print(
        f"[bold]keel demo[/]: {turns} turns twice — frozen snapshot, then live re-read — on "
        f"{'the embedded SmolLM2-135M model' if cfg.model.provider == 'local' else escape(cfg.model.provider)}; "
        f"files under {escape(str(root))}"
    )
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console
    ) as bar:
        task = bar.add_task("starting the model…", total=None)
        last = {"text": ""}

        def status(text: str) -> None:
            last["text"] = text
            bar.update(task, description=text)

        def on_event(ev: Event) -> None:
            if isinstance(ev, TextDelta):
                snippet = " ".join((ev.text or "").split())[:60]
                bar.update(task, description=f"{last['text']} · {escape(snippet)}")
            elif isinstance(ev, MemoryWritten):
                bar.console.print(f"  [green]model saved to {ev.target}: {escape(ev.content[:80])}[/]")

        async with open_model(cfg, home=root) as model:
            result = await run_demo(cfg, model, root=root, turns=turns, status=status, on_event=on_event)
    _report(result)
    return 0


def _run(args: argparse.Namespace) -> int:
    cfg = demo_config(config_from_args(args))
    return anyio.run(_demo, cfg, args)


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "demo", help="the main job: frozen vs live memory on the embedded model, then a compression"
    )
    p.add_argument(
        "--turns", type=int, default=len(DEMO_TURNS), help=f"turns per run (default {len(DEMO_TURNS)})"
    )
    p.add_argument(
        "--out", metavar="DIR", help="where the demo's homes and traces go (default <home>/demo/<time>)"
    )
    p.set_defaults(handler=_run)
