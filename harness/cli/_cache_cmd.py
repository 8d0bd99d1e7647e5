"""`keel cache report TRACE`: measure how much of each prompt a prefix cache could reuse.

`keel cache lint TRACE` (the habits behind the misses) lives in `_cache_lint`; this module
registers the `cache` noun and both verbs.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import cast, get_args

import anyio
import anyio.to_thread
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from harness.cachemeter import (
    MeterError,
    MeterInputError,
    MeterReport,
    RendererName,
    SimName,
    SimSettings,
    load_meter_tokenizer,
    make_renderer,
    measure,
    parse_sim_names,
    parse_tokenizer,
    plot_report,
    read_requests,
    report_tables,
)
from harness.cli._cache_lint import add_lint_verb
from harness.cli._common import Subparsers, config_from_args, console, err_console
from harness.config import KeelConfig
from memory import atomic_write

__all__ = ["register"]

# Show a progress bar from this many requests on (short traces finish before it would draw).
_PROGRESS_FROM = 200


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())
    except FileNotFoundError as exc:
        raise MeterInputError(f"trace file {str(path)!r} does not exist; check the path") from exc
    except OSError as exc:
        raise MeterInputError(f"trace file {str(path)!r} cannot be read: {exc}") from exc


def _write_atomic(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def _settings(args: argparse.Namespace) -> SimSettings:
    for flag, value, least in (
        ("--block-size", args.block_size, 1),
        ("--vllm-blocks", args.vllm_blocks, 1),
        ("--sglang-tokens", args.sglang_tokens, 1),
        ("--ram-states", args.ram_states, 1),
    ):
        if value is not None and value < least:
            raise MeterError(f"{flag} must be at least {least}, got {value!r}")
    if args.openai_ttl <= 0:
        raise MeterError(f"--openai-ttl must be a positive number of seconds, got {args.openai_ttl!r}")
    return SimSettings(
        block_size=args.block_size,
        vllm_budget_blocks=args.vllm_blocks,
        sglang_budget_tokens=args.sglang_tokens,
        ram_states=args.ram_states,
        openai_ttl_s=args.openai_ttl,
    )


async def _run(args: argparse.Namespace, cfg: KeelConfig, sims: tuple[SimName, ...]) -> int:
    trace: Path = args.trace
    settings = _settings(args)
    tokenizer_choice = parse_tokenizer(args.tokenizer)
    renderer_name = cast(RendererName, args.renderer)
    if args.template is not None and renderer_name != "jinja":
        raise MeterError("--template only applies to --renderer jinja")
    total = await anyio.to_thread.run_sync(_count_lines, trace)
    if total == 0:
        raise MeterInputError(f"trace file {str(trace)!r} holds no requests")
    tokenizer = await anyio.to_thread.run_sync(
        functools.partial(load_meter_tokenizer, tokenizer_choice, gguf=args.gguf)
    )
    hf = tokenizer_choice if isinstance(tokenizer_choice, Path) else None
    renderer = await anyio.to_thread.run_sync(
        functools.partial(
            make_renderer, renderer_name, tokenizer, template=args.template, gguf=args.gguf, hf=hf
        )
    )
    work = functools.partial(
        measure,
        read_requests(trace),
        renderer,
        tokenizer=tokenizer.name,
        simulators=sims,
        settings=settings,
        prices=cfg.prices,
        price=args.price,
    )
    report: MeterReport
    # The bar goes to stderr and only on a terminal, so `--json -` on stdout stays clean.
    if err_console.is_terminal and total >= _PROGRESS_FROM:
        columns = (TextColumn("metering"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=err_console, transient=True) as bar:
            task = bar.add_task("requests", total=total)
            report = await anyio.to_thread.run_sync(
                functools.partial(work, progress=lambda done: bar.update(task, completed=done))
            )
    else:
        report = await anyio.to_thread.run_sync(work)

    if args.json_out is not None:
        text = json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
        if args.json_out == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            try:
                await anyio.to_thread.run_sync(_write_atomic, Path(args.json_out), text)
            except OSError as exc:
                raise MeterError(f"cannot write the JSON report to {args.json_out!r}: {exc}") from exc
    if args.plot is not None:
        await anyio.to_thread.run_sync(plot_report, report, args.plot)
    if args.json_out != "-":
        # Piped output has no width to respect; keep the wide per-request table readable.
        out = console if console.is_terminal else Console(highlight=False, width=200)
        for table in report_tables(report, max_rows=args.rows):
            out.print(table)
        if args.json_out is not None:
            console.print(f"JSON report written to {args.json_out}")
        if args.plot is not None:
            console.print(f"plot written to {args.plot}")
    return 0


def _report(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    try:
        sims = parse_sim_names(args.sim)
    except ValueError as exc:
        raise MeterError(f"--sim: {exc}") from exc
    return anyio.run(_run, args, cfg, sims)


def register(sub: Subparsers) -> None:
    p = sub.add_parser("cache", help="measure prompt-cache reuse in request traces")
    verbs = p.add_subparsers(title="verbs", metavar="VERB", required=True)
    r = verbs.add_parser(
        "report",
        help="simulate prefix caches over a trace and say why each miss happened",
        description="Render every request of TRACE (a keel trace or OpenAI-style chat JSONL) to tokens, "
        "simulate prefix caches, and attribute each miss.",
    )
    r.add_argument("trace", type=Path, metavar="TRACE", help="JSONL trace file")
    r.add_argument("--sim", default="all", help="simulators, comma-separated, or 'all' (default)")
    r.add_argument(
        "--renderer", choices=get_args(RendererName), default="canonical", help="default: canonical"
    )
    r.add_argument(
        "--template", type=Path, metavar="PATH", help="Jinja chat template file for --renderer jinja"
    )
    r.add_argument("--gguf", type=Path, metavar="PATH", help="GGUF for --tokenizer gguf / the jinja template")
    r.add_argument(
        "--tokenizer",
        default="cl100k",
        metavar="NAME|PATH",
        help="cl100k (default, offline), chars, gguf, or a Hugging Face tokenizer.json / tokenizer "
        "directory (its chat template serves --renderer jinja); nothing is downloaded",
    )
    r.add_argument("--block-size", type=int, default=16, help="vLLM block size (default 16)")
    r.add_argument(
        "--vllm-blocks", type=int, metavar="N", help="vLLM pool size in blocks (default: unlimited)"
    )
    r.add_argument(
        "--sglang-tokens", type=int, metavar="N", help="SGLang cache size in tokens (default: unlimited)"
    )
    r.add_argument(
        "--ram-states", type=int, default=8, metavar="N", help="llamacpp-ram prompt states (default 8)"
    )
    r.add_argument(
        "--openai-ttl", type=float, default=600.0, metavar="S", help="OpenAI idle TTL in s (default 600)"
    )
    r.add_argument(
        "--json", dest="json_out", metavar="OUT", help="write the JSON report to OUT ('-' for stdout)"
    )
    r.add_argument("--plot", type=Path, metavar="OUT", help="write a PNG plot to OUT (needs the plot extra)")
    r.add_argument(
        "--price", metavar="MODEL", help="price-table entry for every request (default: match model)"
    )
    r.add_argument("--rows", type=int, default=40, metavar="N", help="per-request rows to print (default 40)")
    r.set_defaults(handler=_report)
    add_lint_verb(verbs)
