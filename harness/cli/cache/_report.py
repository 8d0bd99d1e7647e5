"""`keel cache report TRACE`: measure how much of each prompt a prefix cache could reuse.

`keel cache lint TRACE` (the habits behind the misses) lives in `_lint.py`; this module
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
    ROUTING_POLICIES,
    MeterError,
    MeterInputError,
    MeterRequest,
    MeterResults,
    MeterRun,
    RendererName,
    ReplicasAsk,
    RoutingPolicy,
    SimName,
    SimSettings,
    SweepAsk,
    interleave,
    parse_sim_names,
    parse_tokenizer,
    parse_ttls,
    plot_replicas,
    plot_report,
    plot_ttl_sweep,
    read_requests,
    replica_table,
    report_tables,
    sweep_tables,
)
from harness.cli._common import Subparsers, config_from_args, console, err_console
from harness.cli.cache._lint import add_lint_verb
from harness.config import KeelConfig
from memory import atomic_write

__all__ = ["register"]

# Show a progress bar from this many requests on (short traces finish before it would draw).
_PROGRESS_FROM = 200


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
    for flag, seconds in (
        ("--openai-ttl", args.openai_ttl),
        ("--anthropic-ttl", args.anthropic_ttl),
        ("--server-idle", args.server_idle),
    ):
        if seconds is not None and not seconds > 0:
            raise MeterError(f"{flag} must be a positive number of seconds, got {seconds!r}")
    return SimSettings(
        block_size=args.block_size,
        vllm_budget_blocks=args.vllm_blocks,
        sglang_budget_tokens=args.sglang_tokens,
        ram_states=args.ram_states,
        openai_ttl_s=args.openai_ttl,
        anthropic_ttl_s=args.anthropic_ttl,
        server_idle_s=args.server_idle,
    )


def _read_all(paths: list[Path], notes: list[str]) -> list[MeterRequest]:
    """Every request of every trace, interleaved by time when there are several (blocking)."""
    traces = [(path.stem, list(read_requests(path, notes=notes))) for path in paths]
    if len(traces) == 1:
        return traces[0][1]
    return interleave(traces)


def _counts(text: str, flag: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(item) for item in text.split(",") if item.strip())
    except ValueError as exc:
        raise MeterError(f"{flag} takes server counts like 1,2,4,8, got {text!r}") from exc
    if not counts or min(counts) < 1:
        raise MeterError(f"{flag} takes server counts of at least 1, like 1,2,4,8, got {text!r}")
    return counts


def _policies(text: str) -> tuple[RoutingPolicy, ...]:
    out: list[RoutingPolicy] = []
    for raw in text.split(","):
        item = raw.strip()
        match = next((p for p in ROUTING_POLICIES if p == item), None)
        if match is None:
            raise MeterError(f"--routing: unknown policy {item!r}; choose from {', '.join(ROUTING_POLICIES)}")
        out.append(match)
    return tuple(dict.fromkeys(out))


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(f"{path.stem}-{suffix}{path.suffix or '.png'}")


async def _measure(args: argparse.Namespace, cfg: KeelConfig, sims: tuple[SimName, ...]) -> MeterResults:
    paths: list[Path] = args.trace
    settings = _settings(args)
    tokenizer_choice = parse_tokenizer(args.tokenizer)
    renderer_name = cast(RendererName, args.renderer)
    if args.template is not None and renderer_name != "jinja":
        raise MeterError("--template only applies to --renderer jinja")
    sweep = SweepAsk(parse_ttls(args.ttl_sweep), sims) if args.ttl_sweep is not None else None
    replicas = (
        ReplicasAsk(
            _counts(args.replicas, "--replicas"), _policies(args.routing), parse_sim_names(args.replica_sim)
        )
        if args.replicas is not None
        else None
    )
    notes: list[str] = []
    requests = await anyio.to_thread.run_sync(_read_all, paths, notes)
    if not requests:
        raise MeterInputError(
            f"trace file {str(paths[0])!r} holds no requests"
            if len(paths) == 1
            else "the traces hold no requests"
        )
    run = await MeterRun.open(
        tokenizer_choice,
        renderer_name,
        template=args.template,
        gguf=args.gguf,
        settings=settings,
        prices=cfg.prices,
        price=args.price,
    )
    work = functools.partial(
        run.measure, requests, report=sims, sweep=sweep, replicas=replicas, notices=notes
    )
    # The bar goes to stderr and only on a terminal, so `--json -` on stdout stays clean.
    if err_console.is_terminal and len(requests) >= _PROGRESS_FROM:
        columns = (TextColumn("metering"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=err_console, transient=True) as bar:
            task = bar.add_task("requests", total=len(requests))
            return await anyio.to_thread.run_sync(
                functools.partial(work, progress=lambda done: bar.update(task, completed=done))
            )
    return await anyio.to_thread.run_sync(work)


async def _run(args: argparse.Namespace, cfg: KeelConfig, sims: tuple[SimName, ...]) -> int:
    outcome = await _measure(args, cfg, sims)
    report, sweep, replicas = outcome.report, outcome.sweep, outcome.replicas
    assert report is not None
    if args.json_out is not None:
        data = report.to_json()
        if sweep is not None:
            data["ttl_sweep"] = sweep.to_json()
        if replicas is not None:
            data["replicas"] = replicas.to_json()
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        if args.json_out == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            try:
                await anyio.to_thread.run_sync(_write_atomic, Path(args.json_out), text)
            except OSError as exc:
                raise MeterError(f"cannot write the JSON report to {args.json_out!r}: {exc}") from exc
    plots: list[Path] = []
    if args.plot is not None:
        await anyio.to_thread.run_sync(plot_report, report, args.plot)
        plots.append(args.plot)
        if sweep is not None:
            plots.append(_sibling(args.plot, "ttl"))
            await anyio.to_thread.run_sync(plot_ttl_sweep, sweep, plots[-1])
        if replicas is not None:
            plots.append(_sibling(args.plot, "replicas"))
            await anyio.to_thread.run_sync(plot_replicas, replicas, plots[-1])
    if args.json_out != "-":
        # Piped output has no width to respect; keep the wide per-request table readable.
        out = console if console.is_terminal else Console(highlight=False, width=200)
        for table in report_tables(report, max_rows=args.rows):
            out.print(table)
        for table in sweep_tables(sweep) if sweep is not None else []:
            out.print(table)
        if replicas is not None:
            out.print(replica_table(replicas))
        if args.json_out is not None:
            console.print(f"JSON report written to {args.json_out}")
        for plot in plots:
            console.print(f"plot written to {plot}")
    return 0


def _report(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    try:
        sims = parse_sim_names(args.sim)
    except ValueError as exc:
        raise MeterError(f"--sim: {exc}") from exc
    return anyio.run(_run, args, cfg, sims)


def _add_sim_args(r: argparse.ArgumentParser) -> None:
    """The simulators' knobs, the sweeps, and the outputs of `keel cache report`."""
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
        "--anthropic-ttl", type=float, metavar="S", help="every Anthropic entry's TTL in s (default: as sent)"
    )
    r.add_argument(
        "--server-idle",
        type=float,
        metavar="S",
        help="drop a local server's cache entry unused for S seconds (default: never)",
    )
    r.add_argument(
        "--ttl-sweep",
        nargs="?",
        const="30s,1m,2m,5m,10m,30m,1h",
        metavar="LIST",
        help="also sweep the cache timeout (default list 30s,1m,2m,5m,10m,30m,1h): hit ratio, cost, "
        "idle misses and what a keep-alive would save, per simulator with a clock",
    )
    r.add_argument(
        "--replicas",
        metavar="LIST",
        help="also simulate N servers behind a router, e.g. 1,2,4,8: hit ratio, cost and routed-away "
        "misses per policy and N",
    )
    r.add_argument(
        "--routing",
        default="round_robin,session,prefix",
        metavar="LIST",
        help="routing policies for --replicas (default: round_robin,session,prefix)",
    )
    r.add_argument(
        "--replica-sim",
        default="sglang",
        metavar="NAMES",
        help="server simulators for --replicas (default sglang)",
    )
    r.add_argument(
        "--json", dest="json_out", metavar="OUT", help="write the JSON report to OUT ('-' for stdout)"
    )
    r.add_argument(
        "--plot",
        type=Path,
        metavar="OUT",
        help="write a PNG plot to OUT (needs the plot extra); with --ttl-sweep / --replicas also OUT-ttl.png "
        "and OUT-replicas.png",
    )
    r.add_argument(
        "--price", metavar="MODEL", help="price-table entry for every request (default: match model)"
    )
    r.add_argument("--rows", type=int, default=40, metavar="N", help="per-request rows to print (default 40)")


def register(sub: Subparsers) -> None:
    p = sub.add_parser("cache", help="measure prompt-cache reuse in request traces")
    verbs = p.add_subparsers(title="verbs", metavar="VERB", required=True)
    r = verbs.add_parser(
        "report",
        help="simulate prefix caches over a trace and say why each miss happened",
        description="Render every request of TRACE (a keel trace or OpenAI-style chat JSONL) to tokens, "
        "simulate prefix caches, and attribute each miss.",
    )
    r.add_argument(
        "trace",
        type=Path,
        nargs="+",
        metavar="TRACE",
        help="JSONL trace file(s): keel, chat JSONL, Claude Code transcript, Codex rollout; several are "
        "interleaved by time",
    )
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
    _add_sim_args(r)
    r.set_defaults(handler=_report)
    add_lint_verb(verbs)
