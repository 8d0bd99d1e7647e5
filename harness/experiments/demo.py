"""`keel demo`: the frozen prefix versus the naive `live` policy, on a real model.

The same scripted-user conversation runs twice against one model server — once with the
frozen snapshot, once with `live` (memory re-read before every request). Between turns the
demo writes to memory the way another shell running `keel memory add` would, and the model
may write too. Under `live` each write changes the MEMORY slot early in the system prompt,
so the server re-reads everything after it; under `frozen` the prefix stays byte-identical
and only the new tokens are processed. At the end of the frozen run a compression is forced
(and any turn that crosses the threshold compresses on its own): the flush gets its one
chance to save durable facts, the middle is summarized, the memory snapshot is reloaded and
the prompt rebuilt. Each compression is reported with the turn it ran after, what it cost
(tokens before and after, flush and summary seconds) and the flush's entries one by one:
saved, refused with the reason, or a save the model only *claimed* without a tool call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from pydantic import JsonValue

from harness.cachemeter import MeterRun
from harness.config import KeelConfig, resolve_principal
from harness.events import (
    CompressionFinished,
    CompressionStarted,
    Event,
    FlushCompleted,
    FlushEntry,
    UsageReported,
    Warning,
)
from harness.experiments.runner import apply_overrides
from harness.models.base import ModelClient
from harness.trace import TraceRecord, read_trace
from harness.wiring import SessionOptions, open_session
from memory import MemoryStore, MemoryTarget

__all__ = ["DEMO_TURNS", "CompressionRun", "DemoResult", "PolicyRun", "TurnRow", "demo_config", "run_demo"]

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
# process), and a 4K window so automatic compression keeps every prompt small. A short
# protected tail leaves the forced compression a real middle to summarize: twelve turns
# hold the facts the flush should keep, and the last two stay verbatim.
DEMO_OVERRIDES: dict[str, JsonValue] = {
    "model": {"max_output_tokens": 40, "temperature": 0.2, "context_window": 4096},
    "limits": {"max_iterations": 1},
    "compression": {"flush": "memory_only", "protect_first_n": 1, "protect_last_n": 2, "tail_ratio": 0.05},
    "session_search": {"enabled": False},
    "skills": {"enabled": False},
}
DEMO_FACTS: dict[str, tuple[str, ...]] = {
    "name": ("sam",),
    "editor": ("vim",),
    "deploys": ("friday",),
    "time zone": ("cet",),
    "database": ("postgresql", "postgres"),
    "short answers": ("short", "concise", "direct"),
}
"""The durable facts the demo conversation states, and words that show an entry holds one."""


def demo_config(config: KeelConfig) -> KeelConfig:
    """The demo's settings on top of the user's config (the model server is started with
    them too: its generation cap is `model.max_output_tokens`)."""
    return apply_overrides(config, DEMO_OVERRIDES)


@dataclass(frozen=True, slots=True)
class CompressionRun:
    """One compression: when it ran, what it cost, and what its flush did."""

    after_turn: int
    forced: bool
    tokens_before: int
    tokens_after: int
    flush_s: float
    summary_s: float
    wall_s: float
    entries: tuple[FlushEntry, ...]
    flushed: bool
    """False when no flush ran (flush off, or its call failed)."""
    skipped: str | None
    """Why nothing was compressed, when nothing was."""

    @property
    def saved(self) -> tuple[FlushEntry, ...]:
        return tuple(e for e in self.entries if e.saved)


@dataclass(frozen=True, slots=True)
class TurnRow:
    turn: int
    wall_s: float
    prompt_tokens: int
    reused_tokens: int
    side_write: str | None
    compression: CompressionRun | None = None


@dataclass(frozen=True, slots=True)
class PolicyRun:
    policy: str
    rows: tuple[TurnRow, ...]
    trace_path: Path
    home: Path
    memory: str = ""
    """The memory the model sees at the end (the prompt's memory and user slots)."""


@dataclass(frozen=True, slots=True)
class DemoResult:
    frozen: PolicyRun
    live: PolicyRun
    forced: CompressionRun | None
    """The compression forced at the end of the frozen run."""
    facts_saved: tuple[str, ...]
    """Which of `DEMO_FACTS` the frozen run's flushes saved."""
    facts_in_memory: tuple[str, ...] = ()
    """Which of `DEMO_FACTS` the frozen run's memory holds after the forced compression
    (saved during the turns, by the side writes, or by the flush)."""

    @property
    def compressions(self) -> tuple[CompressionRun, ...]:
        runs = [r.compression for r in self.frozen.rows if r.compression is not None]
        return (*runs, self.forced) if self.forced is not None else tuple(runs)


def compression_runs(
    events: list[Event], *, after_turn: int, forced: bool, wall_s: float
) -> list[CompressionRun]:
    """The compressions in one turn's (or one forced compression's) events."""
    runs: list[CompressionRun] = []
    flush_s = summary_s = 0.0
    entries: tuple[FlushEntry, ...] = ()
    flushed = False
    skipped: str | None = None
    active = False
    for ev in events:
        if isinstance(ev, CompressionStarted):
            active, flush_s, summary_s, entries, flushed, skipped = True, 0.0, 0.0, (), False, None
        elif active and isinstance(ev, UsageReported) and ev.purpose == "flush":
            flush_s += ev.latency_s
        elif active and isinstance(ev, UsageReported) and ev.purpose == "summary":
            summary_s += ev.latency_s
        elif active and isinstance(ev, FlushCompleted):
            entries, flushed = ev.entries, True
        elif active and isinstance(ev, Warning) and ev.message.startswith("compression skipped"):
            skipped = ev.message.removeprefix("compression skipped: ")
        elif active and isinstance(ev, CompressionFinished):
            active = False
            runs.append(
                CompressionRun(
                    after_turn=after_turn,
                    forced=forced,
                    tokens_before=ev.tokens_before,
                    tokens_after=ev.tokens_after,
                    flush_s=flush_s,
                    summary_s=summary_s,
                    wall_s=wall_s,
                    entries=entries,
                    flushed=flushed,
                    skipped=skipped or ("aborted" if ev.aborted else None),
                )
            )
    return runs


def facts_in(entries: tuple[FlushEntry, ...]) -> tuple[str, ...]:
    """Which demo facts the saved entries hold."""
    saved = [e.content.lower() for e in entries if e.saved]
    return tuple(fact for fact, words in DEMO_FACTS.items() if any(w in e for e in saved for w in words))


def facts_in_text(text: str) -> tuple[str, ...]:
    """Which demo facts a text (the memory the model sees) holds."""
    low = text.lower()
    return tuple(fact for fact, words in DEMO_FACTS.items() if any(w in low for w in words))


def _per_turn_reuse(records: list[TraceRecord], meter: MeterRun) -> dict[int, tuple[int, int]]:
    """(prompt, reusable) tokens per turn under the llama.cpp single-slot rule."""
    report = meter.report(records, simulators=("llamacpp",))
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
    meter: MeterRun,
    status: Callable[[str], None],
    on_event: Callable[[Event], None],
) -> tuple[PolicyRun, CompressionRun | None]:
    home = root / policy
    cfg = apply_overrides(demo_config(config), {"memory": {"snapshot_policy": policy}})
    principal = resolve_principal(cfg)
    side = MemoryStore(
        principal.workspace_memories_dir(home), user_directory=principal.user_memories_dir(home)
    )
    walls: dict[int, float] = {}
    in_turn: dict[int, CompressionRun] = {}
    forced: CompressionRun | None = None
    async with open_session(cfg, SessionOptions(model=model, home=home, source="demo")) as session:
        for n, text in enumerate(DEMO_TURNS[:turns], 1):
            status(f"{policy}: turn {n}/{turns}")
            started = time.monotonic()
            seen: list[Event] = []
            async with session.run_turn(text) as events:
                async for ev in events:
                    seen.append(ev)
                    on_event(ev)
            walls[n] = time.monotonic() - started
            runs = compression_runs(seen, after_turn=n - 1, forced=False, wall_s=walls[n])
            if runs:
                in_turn[n] = runs[-1]
            write = SIDE_WRITES.get(n)
            if write is not None:
                await side.add(write[0], write[1])
        if compress:
            status(f"{policy}: forced compression (flush, summary, reload)")
            started = time.monotonic()
            compression_events = await session.compress()
            wall = time.monotonic() - started
            for ev in compression_events:
                on_event(ev)
            found = compression_runs(compression_events, after_turn=len(walls), forced=True, wall_s=wall)
            forced = found[-1] if found else None
        memory = f"{session.prompt.slot_text('memory')}\n{session.prompt.slot_text('user')}"
    trace_path = session.handles.trace_path
    assert trace_path is not None
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace_path)))
    reuse = await anyio.to_thread.run_sync(_per_turn_reuse, records, meter)
    rows = tuple(
        TurnRow(
            turn=n,
            wall_s=walls[n],
            prompt_tokens=reuse.get(n, (0, 0))[0],
            reused_tokens=reuse.get(n, (0, 0))[1],
            side_write=SIDE_WRITES[n][1] if n in SIDE_WRITES else None,
            compression=in_turn.get(n),
        )
        for n in sorted(walls)
    )
    return PolicyRun(policy, rows, trace_path, home, memory), forced


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
    meter = await MeterRun.open()
    frozen, forced = await _run_policy(
        "frozen",
        config,
        model,
        root,
        turns,
        compress=True,
        meter=meter,
        status=status,
        on_event=on_event,
    )
    live, _ = await _run_policy(
        "live",
        config,
        model,
        root,
        turns,
        compress=False,
        meter=meter,
        status=status,
        on_event=on_event,
    )
    flushes = [r.compression for r in frozen.rows if r.compression is not None]
    if forced is not None:
        flushes.append(forced)
    return DemoResult(
        frozen=frozen,
        live=live,
        forced=forced,
        facts_saved=facts_in(tuple(e for r in flushes for e in r.entries)),
        facts_in_memory=facts_in_text(frozen.memory),
    )
