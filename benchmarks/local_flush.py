"""Which local model, and which flush request shape, really saves the facts that matter?

Twelve short conversations (`local_flush_conversations.yaml`, written for keel) plant 61
durable facts — names, time zones, editors, deploy rules, database versions, preferences —
next to transient detail that should not be kept. For each model and each request shape of
`harness.compress.flush` it sends one flush request per conversation (keel's own
identity and memory guidance as the system prompt, the memory tool as the tool list, the
same for every shape so only the final note and `tool_choice` differ), reads the reply with
`read_flush_reply`, and runs the writes through the real memory tool into a fresh store
(so the scanner and the budget apply). Reported per model × shape, side by side:

- valid: the share of offered items (calls, batch operations, list lines) that became an
  accepted memory write;
- facts: planted facts captured — a fact counts when one saved entry of at most 300
  characters contains every term of one of its match alternatives as whole words
  (case-insensitive); entries that match no planted fact are junk;
- claimed: replies that say they saved something without a valid write;
- wall: median seconds per flush request; gen: median generation seconds;
- prompt tok/s: uncached prompt tokens per second of prompt processing, median over the
  requests that evaluated at least 200 new prompt tokens (the server's own timings).

    python benchmarks/local_flush.py [--models qwen2.5-coder-0.5b,smollm2-135m] \
        [--shapes free_calls,forced_batch] [--limit 12] [--gguf NAME=PATH]

Models are the built-in names (their weights must be installed, see README) or NAME=PATH
pairs given with --gguf. `--demo-trace TRACE` instead replays the flush of a `keel demo` run
(its frozen trace's flush request, minus the note) with each shape, on each model, and prints
what each would save and which of the demo's six facts that covers. The default run is the default model with every shape. The last
line is `facts_captured <fraction>` for the default model's best shape (or the first
model run when the default is not among them).
"""

from __future__ import annotations

import functools
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import anyio
import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median, script_parser
from harness.compress.flush import (
    FLUSH_SHAPES,
    FlushShape,
    build_flush_shape_request,
    read_flush_reply,
)
from harness.config import DEFAULT_LOCAL_MODEL, LocalModelName
from harness.events import FlushEntry
from harness.experiments.demo import facts_in
from harness.experiments.retention.facts import PlantedFact as Fact
from harness.experiments.retention.facts import fact_in
from harness.models.local import BUILTIN_MODELS, LocalModel, start_local_model
from harness.models.openai._wire import build_body, parse_completion
from harness.trace import read_trace
from harness.types import Message, Role, ToolCall, ToolSpec
from memory import MemoryStore, MemoryTool, memory_tool_schema
from prompts import load_text

DATA = Path(__file__).with_name("local_flush_conversations.yaml")


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    messages: tuple[Message, ...]
    facts: tuple[Fact, ...]


@dataclass(slots=True)
class Cell:
    offered: int = 0
    accepted: int = 0
    facts: int = 0
    planted: int = 0
    junk: int = 0
    claimed: int = 0
    replies_with_save: int = 0
    requests: int = 0
    walls: list[float] = field(default_factory=list)
    gens: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)


def load_conversations(path: Path) -> list[Conversation]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    out: list[Conversation] = []
    for c in raw["conversations"]:
        msgs = tuple(Message(role=cast(Role, m["role"]), content=str(m["content"])) for m in c["messages"])
        facts = tuple(
            Fact(str(f["id"]), tuple(tuple(str(t).lower() for t in alt) for alt in f["match"]))
            for f in c["facts"]
        )
        out.append(Conversation(str(c["id"]), msgs, facts))
    return out


def matches(entry: str, fact: Fact) -> bool:
    """The local-flush rule (`harness.experiments.retention.facts`, shared with the retention eval)."""
    return fact_in(entry, fact)


def demo_conversation(trace: Path) -> tuple[str, tuple[Message, ...], tuple[ToolSpec, ...]]:
    """System prompt, transcript and tools of the first flush request in a demo trace."""
    for record in read_trace(trace):
        if record.purpose == "flush":
            messages = tuple(
                Message(
                    role=m.role,
                    content=m.content,
                    tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in m.tool_calls),
                    tool_call_id=m.tool_call_id,
                    name=m.name,
                )
                for m in record.messages[:-1]  # the last one is the flush note
            )
            tools = tuple(ToolSpec(t.name, t.description, t.parameters) for t in record.tools)
            return record.system, messages, tools
    raise SystemExit(f"{trace} holds no flush request; run the full demo (12 turns)")


@asynccontextmanager
async def _served(
    name: str, gguf: Path | None, *, models_dir: Path, max_tokens: int
) -> AsyncIterator[tuple[LocalModel, httpx.AsyncClient]]:
    """The local model `name` (a built-in, else the default with `gguf`) and a client for its server."""
    builtin: LocalModelName = DEFAULT_LOCAL_MODEL
    for known in BUILTIN_MODELS:
        if known == name:
            builtin = known
    async with (
        start_local_model(
            model=builtin, gguf=gguf, models_dir=models_dir, n_ctx=4096, max_tokens=max_tokens
        ) as lm,
        httpx.AsyncClient(timeout=1800, headers={"Authorization": f"Bearer {lm.api_key}"}) as http,
    ):
        yield lm, http


async def replay_demo(
    name: str, gguf: Path | None, shapes: list[FlushShape], trace: Path, *, models_dir: Path, max_tokens: int
) -> None:
    system, messages, tools = demo_conversation(trace)
    async with _served(name, gguf, models_dir=models_dir, max_tokens=max_tokens) as (lm, http):
        for shape in shapes:
            request = build_flush_shape_request(
                shape, system=system, messages=messages, tools=tools, max_tokens=max_tokens
            )
            started = time.perf_counter()
            r = await http.post(
                f"{lm.base_url}/chat/completions", json=build_body(request, model=lm.model, stream=False)
            )
            r.raise_for_status()
            reply = parse_completion(r.json(), what="local", fallback_model=lm.model)
            wall = time.perf_counter() - started
            reading = read_flush_reply(
                shape, reply, instructions=[request.system, *(t.description for t in request.tools)]
            )
            entries: list[FlushEntry] = []
            with tempfile.TemporaryDirectory() as tmp:
                tool = MemoryTool(MemoryStore(Path(tmp) / "memories"))
                for write in reading.writes:
                    result = await tool.handle(write.arguments)
                    entries.append(FlushEntry(write.target, write.action, write.content, result.success))
            facts = facts_in(tuple(entries))
            print(
                f"{name} {shape}: {len(facts)} of 6 demo facts ({', '.join(facts) or 'none'}), {wall:.1f} s"
            )
            for e in entries:
                print(f"  {'+' if e.saved else '-'} {e.target}: {e.content}")
            for refusal in reading.refusals:
                print(f"  - refused: {refusal.text[:100]!r} ({refusal.reason})")


def _system() -> str:
    return load_text("identity") + "\n\n" + load_text("guidance_memory")


def _tools() -> tuple[ToolSpec, ...]:
    schema = memory_tool_schema(load_text("tool_memory"))
    params = schema["parameters"]
    assert isinstance(params, dict)
    return (ToolSpec(name="memory", description=str(schema["description"]), parameters=params),)


async def _one(
    http: httpx.AsyncClient,
    base_url: str,
    model: str,
    shape: FlushShape,
    conv: Conversation,
    cell: Cell,
    max_tokens: int,
) -> None:
    request = build_flush_shape_request(
        shape, system=_system(), messages=conv.messages, tools=_tools(), max_tokens=max_tokens
    )
    body = build_body(request, model=model, stream=False)
    started = time.perf_counter()
    r = await http.post(f"{base_url}/chat/completions", json=body)
    wall = time.perf_counter() - started
    r.raise_for_status()
    data = r.json()
    reply = parse_completion(data, what="local", fallback_model=model)
    timings = data.get("timings") or {}
    cell.requests += 1
    cell.walls.append(wall)
    cell.gens.append(float(timings.get("predicted_ms", 0.0)) / 1000)
    if int(timings.get("prompt_n", 0)) >= 200 and float(timings.get("prompt_ms", 0)) > 0:
        cell.rates.append(int(timings["prompt_n"]) / (float(timings["prompt_ms"]) / 1000))
    reading = read_flush_reply(
        shape, reply, instructions=[request.system, *(t.description for t in request.tools)]
    )
    cell.offered += len(reading.writes) + len(reading.refusals)
    cell.claimed += int(reading.claimed_without_call)
    with tempfile.TemporaryDirectory() as tmp:
        tool = MemoryTool(MemoryStore(Path(tmp) / "memories"))
        saved: list[str] = []
        for write in reading.writes:
            result = await tool.handle(write.arguments)
            if result.success:
                saved.append(write.content)
    cell.accepted += len(saved)
    cell.replies_with_save += int(bool(saved))
    cell.planted += len(conv.facts)
    cell.facts += sum(any(matches(e, f) for e in saved) for f in conv.facts)
    cell.junk += sum(not any(matches(e, f) for f in conv.facts) for e in saved)
    cell.saved.extend(f"{conv.id}: {e}" for e in saved)
    cell.refused.extend(f"{conv.id}: {r.text[:120]!r} — {r.reason}" for r in reading.refusals)
    calls = "; ".join(f"{c.name}({c.arguments[:200]})" for c in reply.message.tool_calls)
    cell.replies.append(f"{conv.id}: text {reply.message.content[:200]!r} calls {calls}")


async def run_model(
    name: str,
    gguf: Path | None,
    shapes: list[FlushShape],
    convs: list[Conversation],
    *,
    models_dir: Path,
    max_tokens: int,
    verbose: bool,
) -> dict[FlushShape, Cell]:
    cells: dict[FlushShape, Cell] = {s: Cell() for s in shapes}
    async with _served(name, gguf, models_dir=models_dir, max_tokens=max_tokens) as (lm, http):
        for i, conv in enumerate(convs):
            # Rotate the shape order so no shape always pays the cold prefill.
            order = shapes[i % len(shapes) :] + shapes[: i % len(shapes)]
            for shape in order:
                await _one(http, lm.base_url, lm.model, shape, conv, cells[shape], max_tokens)
                if verbose:
                    c = cells[shape]
                    print(
                        f"  {name} {shape} {conv.id}: facts {c.facts}/{c.planted}, {c.walls[-1]:.1f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    return cells


def _report(results: dict[str, dict[FlushShape, Cell]]) -> None:
    head = (
        f"{'model':<22} {'shape':<13} {'valid':>7} {'facts':>13} {'junk':>5} {'claimed':>7} {'saved in':>8} "
        f"{'wall s':>7} {'gen s':>6} {'prompt tok/s':>12}"
    )
    print(head)
    print("-" * len(head))
    for model, cells in results.items():
        for shape, c in cells.items():
            valid = f"{c.accepted / c.offered:.0%}" if c.offered else "-"
            rate = f"{median(c.rates):.0f}" if c.rates else "-"
            facts = f"{c.facts}/{c.planted} ({c.facts / max(c.planted, 1):.0%})"
            print(
                f"{model:<22} {shape:<13} {valid:>7} {facts:>13} {c.junk:>5} {c.claimed:>7} "
                f"{c.replies_with_save:>3}/{c.requests:<4} {median(c.walls):>7.1f} {median(c.gens):>6.1f} {rate:>12}"
            )
    print("\nvalid: accepted writes / offered items; facts: planted facts captured; junk: saved entries")
    print("matching no planted fact; saved in: replies with at least one accepted write.")


def main() -> None:
    p = script_parser(__doc__, whole=True)
    p.add_argument("--models", default=DEFAULT_LOCAL_MODEL, help="comma-separated built-in model names")
    p.add_argument(
        "--gguf", action="append", default=[], metavar="NAME=PATH", help="a GGUF file to run as NAME"
    )
    p.add_argument("--shapes", default=",".join(FLUSH_SHAPES))
    p.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    p.add_argument("--data", type=Path, default=DATA, help="the conversations file")
    p.add_argument("--models-dir", type=Path, default=Path(tempfile.gettempdir()) / "keel-models")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--show-saved", action="store_true", help="print every saved entry")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--demo-trace", type=Path, help="replay the flush of this `keel demo` frozen-run trace")
    args = p.parse_args()
    shapes = [cast(FlushShape, s) for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in FLUSH_SHAPES]
    if unknown:
        p.error(f"unknown shapes {unknown}; choose from {', '.join(FLUSH_SHAPES)}")
    convs = load_conversations(args.data)
    if args.limit:
        convs = convs[: args.limit]
    runs: list[tuple[str, Path | None]] = []
    for name in [m for m in args.models.split(",") if m]:
        if name not in BUILTIN_MODELS:
            p.error(
                f"unknown model {name!r}; built-in: {', '.join(BUILTIN_MODELS)} (or use --gguf NAME=PATH)"
            )
        runs.append((name, None))
    for pair in args.gguf:
        name, _, path = pair.partition("=")
        runs.append((name, Path(path)))
    if args.demo_trace is not None:
        for name, gguf in runs:
            anyio.run(
                functools.partial(
                    replay_demo,
                    name,
                    gguf,
                    shapes,
                    args.demo_trace,
                    models_dir=args.models_dir,
                    max_tokens=args.max_tokens,
                )
            )
        return
    print(
        f"{len(convs)} conversations, {sum(len(c.facts) for c in convs)} planted facts; "
        f"models {', '.join(n for n, _ in runs)}; shapes {', '.join(shapes)}\n"
    )
    results: dict[str, dict[FlushShape, Cell]] = {}
    for name, gguf in runs:
        results[name] = anyio.run(
            functools.partial(
                run_model,
                name,
                gguf,
                shapes,
                convs,
                models_dir=args.models_dir,
                max_tokens=args.max_tokens,
                verbose=args.verbose,
            )
        )
    _report(results)
    if args.show_saved:
        for model, cells in results.items():
            for shape, c in cells.items():
                print(f"\n{model} {shape}:")
                for e in c.saved:
                    print(f"  + {e}")
                for e in c.refused:
                    print(f"  - {e}")
                if args.verbose:
                    for e in c.replies:
                        print(f"  > {e}")
    first = DEFAULT_LOCAL_MODEL if DEFAULT_LOCAL_MODEL in results else next(iter(results))
    best = max(results[first].values(), key=lambda c: (c.facts, -c.junk))
    print(f"\nfacts_captured {best.facts / max(best.planted, 1):.3f}")


if __name__ == "__main__":
    main()
