"""`keel demo`: the main job, on the embedded model with no configuration."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import anyio
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.cli._common import Subparsers, config_from_args, console, err_console, noun_parser
from harness.config import KeelConfig
from harness.events import Event, MemoryWritten, TextDelta
from harness.experiments.demo import DEMO_FACTS, DEMO_TURNS, CompressionRun, DemoResult, demo_config, run_demo
from harness.models.factory import open_model

__all__ = ["register"]


def _pct(reused: int, prompt: int) -> str:
    return f"{reused / prompt * 100:.0f}%" if prompt else "-"


def _cost(run: CompressionRun) -> str:
    if run.skipped:
        return f"skipped: {run.skipped}"
    return (
        f"~{run.tokens_before:,} → ~{run.tokens_after:,} tok; flush {run.flush_s:.1f}s, "
        f"summary {run.summary_s:.1f}s, {len(run.saved)} saved"
    )


def _flush_entries(run: CompressionRun) -> None:
    label = "forced at the end" if run.forced else f"before turn {run.after_turn + 1}"
    console.print(
        f"\n[bold]compression {label}[/]: {escape(_cost(run))}; whole compression {run.wall_s:.1f}s"
    )
    if run.skipped:
        return
    if not run.flushed:
        console.print("  the flush did not run (its call failed, or flush is off): nothing saved")
        return
    if not run.entries:
        console.print("  the flush offered nothing: no tool call and no fact")
    for e in run.entries:
        if e.saved:
            console.print(f"  [green]+ saved to {escape(e.target)}: {escape(e.content)}[/]")
        elif e.action == "claimed":
            console.print(
                f"  [yellow]! claimed a save without calling the tool: {escape(e.content[:160])}[/]"
            )
        else:
            console.print(
                f"  [red]- refused: {escape(e.content[:160])}[/] [dim]({escape(e.reason[:160])})[/]"
            )


def _report(result: DemoResult) -> None:
    table = Table(title="frozen snapshot vs live re-read: per-turn wall time and prefix reuse")
    for col in ("turn", "frozen s", "live s", "frozen reuse", "live reuse"):
        table.add_column(col, justify="right")
    for col in ("memory written after the turn", "compression (frozen run)"):
        table.add_column(col, justify="left")
    for f, lv in zip(result.frozen.rows, result.live.rows, strict=False):
        table.add_row(
            str(f.turn),
            f"{f.wall_s:.2f}",
            f"{lv.wall_s:.2f}",
            _pct(f.reused_tokens, f.prompt_tokens),
            _pct(lv.reused_tokens, lv.prompt_tokens),
            escape(f.side_write or ""),
            escape(f"before this turn: {_cost(f.compression)}") if f.compression else "",
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
        escape(f"forced at the end: {_cost(result.forced)}") if result.forced else "",
        style="bold",
    )
    console.print(table)
    console.print(
        "[dim]reuse: prompt tokens the llama.cpp server could keep from the previous request "
        "(cache meter, llamacpp rule); wall time includes generation.[/]"
    )
    for run in result.compressions:
        _flush_entries(run)
    facts = ", ".join(result.facts_saved) or "none"
    held = ", ".join(result.facts_in_memory) or "none"
    console.print(
        f"\n[bold]durable facts the flush kept[/]: {len(result.facts_saved)} of {len(DEMO_FACTS)} ({escape(facts)})"
        f"\n[bold]durable facts in memory after the compression[/]: {len(result.facts_in_memory)} of "
        f"{len(DEMO_FACTS)} ({escape(held)}) — saved during the turns or by the flush; the flush reads only "
        "the turns the compression drops (compression.flush_chunk_tokens), the kept turns stay visible"
    )
    console.print(
        f"\ntraces: {escape(str(result.frozen.trace_path))}\n        {escape(str(result.live.trace_path))}"
    )
    console.print(f"[dim]see them with: keel cache report {escape(str(result.frozen.trace_path))}[/]")


def _model_words(cfg: KeelConfig) -> str:
    m = cfg.model
    if m.provider != "local":
        return escape(f"{m.provider} {m.name or ''}".strip())
    if m.gguf is not None:
        return f"the embedded model {escape(m.gguf.name)}"
    return f"the embedded {escape(m.local_model)} model"


async def _demo(cfg: KeelConfig, args: argparse.Namespace) -> int:
    home = cfg.resolved_home()
    root = Path(args.out) if args.out else home / "demo" / time.strftime("%Y%m%d-%H%M%S")
    turns = max(1, min(args.turns, len(DEMO_TURNS)))
    console.print(
        f"[bold]keel demo[/]: {turns} turns twice — frozen snapshot, then live re-read — on "
        f"{_model_words(cfg)}; files under {escape(str(root))}"
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
    p = noun_parser(sub, "demo")
    p.add_argument(
        "--turns", type=int, default=len(DEMO_TURNS), help=f"turns per run (default {len(DEMO_TURNS)})"
    )
    p.add_argument(
        "--out", metavar="DIR", help="where the demo's homes and traces go (default <home>/demo/<time>)"
    )
    p.set_defaults(handler=_run)
