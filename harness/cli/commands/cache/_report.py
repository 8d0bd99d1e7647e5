"""`keel cache report TRACE`: measure how much of each prompt a prefix cache could reuse.

`keel cache lint TRACE` (the habits behind the misses) lives in `_lint.py`; this module
registers the `cache` noun and both verbs.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import cast, get_args

import anyio
import anyio.to_thread
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
from harness.cli._common import Subparsers, config_from_args, console, err_console, verb_parsers
from harness.cli.commands.cache._lint import add_lint_verb
from harness.cli.commands.cache._out import text_console, write_json
from harness.config import KeelConfig

__all__ = ["register"]

# Show a progress bar from this many requests on (short traces finish before it would draw).
_PROGRESS_FROM = 200


@dataclass(frozen=True, slots=True)
class _Knob:
    """A simulator setting the command line may change: its flag, its `SimSettings` field."""

    flag: str
    field: str
    kind: type[int] | type[float]
    """`int` (a count, at least 1) or `float` (seconds, more than 0)."""
    metavar: str
    help: str


_KNOBS = (
    _Knob("--block-size", "block_size", int, "N", "vLLM block size (default 16)"),
    _Knob("--vllm-blocks", "vllm_budget_blocks", int, "N", "vLLM pool size in blocks (default: unlimited)"),
    _Knob(
        "--sglang-tokens",
        "sglang_budget_tokens",
        int,
        "N",
        "SGLang cache size in tokens (default: unlimited)",
    ),
    _Knob("--ram-states", "ram_states", int, "N", "llamacpp-ram prompt states (default 8)"),
    _Knob("--openai-ttl", "openai_ttl_s", float, "S", "OpenAI idle TTL in s (default 600)"),
    _Knob(
        "--anthropic-ttl",
        "anthropic_ttl_s",
        float,
        "S",
        "every Anthropic entry's TTL in s (default: as sent)",
    ),
    _Knob(
        "--server-idle",
        "server_idle_s",
        float,
        "S",
        "drop a local server's cache entry unused for S seconds (default: never)",
    ),
)


def _settings(args: argparse.Namespace) -> SimSettings:
    """`SimSettings` as the command line sets them (each knob defaults to the simulators' own)."""
    for knob in _KNOBS:
        value: float | None = getattr(args, knob.field)
        if value is not None and knob.kind is int and value < 1:
            raise MeterError(f"{knob.flag} must be at least 1, got {value!r}")
        if value is not None and knob.kind is float and not value > 0:
            raise MeterError(f"{knob.flag} must be a positive number of seconds, got {value!r}")
    # each knob's `dest` is its `SimSettings` field, and its default the simulators' own
    return SimSettings(**{knob.field: getattr(args, knob.field) for knob in _KNOBS})


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
        await write_json(args.json_out, data)
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
        out = text_console()
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
    defaults = SimSettings()
    for knob in _KNOBS:
        default = getattr(defaults, knob.field)
        r.add_argument(
            knob.flag, dest=knob.field, type=knob.kind, default=default, metavar=knob.metavar, help=knob.help
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
    verbs = verb_parsers(sub, "cache")
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
