"""`keel demo`: the frozen prefix versus the naive `live` policy, on a real model.

The same scripted-user conversation runs twice against one model server — once with the
frozen snapshot, once with `live` (memory re-read before every request). Between turns the
demo writes to memory the way another shell running `keel memory add` would, and the model
may write too. Under `live` each write changes the MEMORY slot early in the system prompt,
so the server re-reads everything after it; under `frozen` the prefix stays byte-identical
and only the new tokens are processed. At the end of the frozen run a compression is forced:
the flush gets its one chance to save durable facts, the middle is summarized, the memory
snapshot is reloaded and the prompt rebuilt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from pydantic import JsonValue

from harness.cachemeter import CanonicalRenderer, load_meter_tokenizer, measure
from harness.config import KeelConfig
from harness.events import CompressionFinished, Event, FlushCompleted, UsageReported
from harness.experiments.runner import apply_overrides
from harness.loop.open import SessionHandles, open_session
from harness.models.base import ModelClient
from harness.tokens import Tokenizer
from harness.trace import TraceRecord, read_trace
from memory import MemoryStore, MemoryTarget, memories_dir

__all__ = ["DEMO_TURNS", "DemoResult", "PolicyRun", "demo_config", "run_demo"]

DEMO_TURNS: tuple[str, ...] = (
    "Hi! I'm Sam. I maintain a small Rust web service called quill. I like short, direct answers.",
    "Please remember that I use vim, so skip editor suggestions for anything else.",
    "What is a sensible way to structure error handling in a Rust web service?",
    "We deploy quill with Docker, and only on Fridays.",
    "How should I carry a request id through async tasks for logging?",
    "My timezone is CET.",
    "Give me three tips for faster cargo builds.",
    "Our database is PostgreSQL 16.",
    "How would you test a handler that talks to the database?",
    "What do you know about me and my project so far?",
    "Suggest a name for a feature flag that turns on the new response cache.",
    "Thanks! One last piece of advice before I ship?",
)
# Written between turns as another process would (`keel memory add` in a second shell).
SIDE_WRITES: dict[int, tuple[MemoryTarget, str]] = {
    2: ("user", "Sam prefers short, direct answers"),
    4: ("memory", "quill deploys with Docker, on Fridays only"),
    6: ("user", "Sam's timezone is CET"),
    8: ("memory", "quill uses PostgreSQL 16"),
    10: ("user", "Sam uses vim"),
}
# A small model on a CPU: short answers, one model call per turn (a tool call ends the
# turn), only the memory tool (every tool's schema is part of the prompt the server must
# process), and a 4K window so automatic compression keeps every prompt small.
DEMO_OVERRIDES: dict[str, JsonValue] = {
    "model": {"max_output_tokens": 40, "temperature": 0.2, "context_window": 4096},
    "limits": {"max_iterations": 1},
    "compression": {"flush": "memory_only"},
    "session_search": {"enabled": False},
    "skills": {"enabled": False},
}


def demo_config(config: KeelConfig) -> KeelConfig:
    """The demo's settings on top of the user's config (the model server is started with
    them too: its generation cap is `model.max_output_tokens`)."""
    return apply_overrides(config, DEMO_OVERRIDES)


@dataclass(frozen=True, slots=True)
class TurnRow:
    turn: int
    wall_s: float
    prompt_tokens: int
    reused_tokens: int
    side_write: str | None


@dataclass(frozen=True, slots=True)
class PolicyRun:
    policy: str
    rows: tuple[TurnRow, ...]
    trace_path: Path
    home: Path


@dataclass(frozen=True, slots=True)
class DemoResult:
    frozen: PolicyRun
    live: PolicyRun
    flush_saved: tuple[str, ...]
    flush_refused: tuple[str, ...]
    compression: dict[str, float]
    """Wall seconds of the flush call, the summary call and the whole compression."""
    tokens_before: int
    tokens_after: int


def _per_turn_reuse(records: list[TraceRecord], tokenizer: Tokenizer) -> dict[int, tuple[int, int]]:
    """(prompt, reusable) tokens per turn under the llama.cpp single-slot rule."""
    report = measure(records, CanonicalRenderer(tokenizer), tokenizer="cl100k", simulators=("llamacpp",))
    out: dict[int, tuple[int, int]] = {}
    for r in report.requests:
        if r.purpose != "turn" or r.turn is None:
            continue
        p, u = out.get(r.turn, (0, 0))
        out[r.turn] = (p + r.prompt_tokens, u + r.sims["llamacpp"].reusable)
    return out


async def _run_policy(
    policy: str,
    config: KeelConfig,
    model: ModelClient,
    root: Path,
    turns: int,
    *,
    compress: bool,
    tokenizer: Tokenizer,
    status: Callable[[str], None],
    on_event: Callable[[Event], None],
) -> tuple[PolicyRun, list[Event], float]:
    home = root / policy
    cfg = apply_overrides(demo_config(config), {"memory": {"snapshot_policy": policy}})
    side = MemoryStore(memories_dir(home))
    handles: list[SessionHandles] = []
    walls: dict[int, float] = {}
    compression_events: list[Event] = []
    compress_wall = 0.0
    async with open_session(cfg, model=model, home=home, source="demo", handles=handles) as session:
        for n, text in enumerate(DEMO_TURNS[:turns], 1):
            status(f"{policy}: turn {n}/{turns}")
            started = time.monotonic()
            async with session.run_turn(text) as events:
                async for ev in events:
                    on_event(ev)
            walls[n] = time.monotonic() - started
            write = SIDE_WRITES.get(n)
            if write is not None:
                await side.add(write[0], write[1])
        if compress:
            status(f"{policy}: forced compression (flush, summary, reload)")
            started = time.monotonic()
            compression_events = await session.compress()
            compress_wall = time.monotonic() - started
            for ev in compression_events:
                on_event(ev)
    trace_path = handles[0].trace_path
    assert trace_path is not None
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace_path)))
    reuse = await anyio.to_thread.run_sync(_per_turn_reuse, records, tokenizer)
    rows = tuple(
        TurnRow(
            turn=n,
            wall_s=walls[n],
            prompt_tokens=reuse.get(n, (0, 0))[0],
            reused_tokens=reuse.get(n, (0, 0))[1],
            side_write=SIDE_WRITES[n][1] if n in SIDE_WRITES else None,
        )
        for n in sorted(walls)
    )
    return PolicyRun(policy, rows, trace_path, home), compression_events, compress_wall


async def run_demo(
    config: KeelConfig,
    model: ModelClient,
    *,
    root: Path,
    turns: int = len(DEMO_TURNS),
    status: Callable[[str], None] = lambda _: None,
    on_event: Callable[[Event], None] = lambda _: None,
) -> DemoResult:
    """Run the demo conversation under `frozen` (then compress) and under `live`."""
    tokenizer = await anyio.to_thread.run_sync(load_meter_tokenizer, "cl100k")
    frozen, events, compress_wall = await _run_policy(
        "frozen",
        config,
        model,
        root,
        turns,
        compress=True,
        tokenizer=tokenizer,
        status=status,
        on_event=on_event,
    )
    live, _, _ = await _run_policy(
        "live",
        config,
        model,
        root,
        turns,
        compress=False,
        tokenizer=tokenizer,
        status=status,
        on_event=on_event,
    )
    flush = next((e for e in events if isinstance(e, FlushCompleted)), None)
    finished = next((e for e in events if isinstance(e, CompressionFinished)), None)
    summary_s = sum(e.latency_s for e in events if isinstance(e, UsageReported) and e.purpose == "summary")
    return DemoResult(
        frozen=frozen,
        live=live,
        flush_saved=tuple(f"{e.target}: {e.content}" for e in flush.entries if e.saved) if flush else (),
        flush_refused=tuple(f"{e.content[:80]} ({e.reason[:80]})" for e in flush.entries if not e.saved)
        if flush
        else (),
        compression={
            "flush_s": flush.latency_s if flush else 0.0,
            "summary_s": summary_s,
            "total_s": compress_wall,
        },
        tokens_before=finished.tokens_before if finished else 0,
        tokens_after=finished.tokens_after if finished else 0,
    )
