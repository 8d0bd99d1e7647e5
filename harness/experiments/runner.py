"""Run a scenario through a real session and collect what an experiment compares.

`run_scenario` plays the user turns (and, with the scripted model, the assistant replies),
applies the scenario's out-of-band memory writes through a *separate* store instance (as
another process would), forces the scenario's compressions, and afterwards checks the
fact-retention probes: does each planted fact survive in MEMORY.md/USER.md, in the last
summary, and — with a real model, when asked — in the answer to its probe question.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import JsonValue

from harness.config import KeelConfig, resolve_principal
from harness.errors import ConfigError
from harness.events import CompressionFinished, Event, FlushCompleted, TextDelta, TurnEnded
from harness.experiments.scenarios.model import ScenarioModel
from harness.experiments.scenarios.spec import MemoryWriteSpec, Scenario, TurnSpec
from harness.loop.session import Session
from harness.models.base import ModelClient
from harness.wiring import SessionOptions, open_session
from memory import MemoryStore

__all__ = ["ProbeResult", "RunResult", "TurnStat", "apply_overrides", "run_scenario"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class TurnStat:
    turn: int
    wall_s: float
    requests: int
    compressed: bool


@dataclass(frozen=True, slots=True)
class ProbeResult:
    fact: str
    keyword: str
    in_memory: bool
    in_summary: bool
    in_answer: bool | None
    """None when the probe question was not asked (the scripted model cannot answer)."""


@dataclass(frozen=True, slots=True)
class RunResult:
    label: str
    home: Path
    trace_path: Path
    turns: tuple[TurnStat, ...]
    probes: tuple[ProbeResult, ...]
    flush_saved: tuple[str, ...]
    compressions: int
    wall_s: float


def _merge(base: dict[str, JsonValue], over: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    out = dict(base)
    for key, value in over.items():
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            out[key] = _merge(current, value)
        else:
            out[key] = value
    return out


def apply_overrides(config: KeelConfig, overrides: Mapping[str, JsonValue]) -> KeelConfig:
    """`config` with a nested mapping of overrides merged in and re-validated.

    Raises:
        ConfigError: an override names an unknown key or an invalid value.
    """
    from pydantic import ValidationError

    data = _merge(config.model_dump(mode="json"), overrides)
    try:
        return KeelConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"scenario config overrides are invalid: {exc}") from exc


def _store(config: KeelConfig, home: Path) -> MemoryStore:
    """The curated files the session under test uses (its principal's), with the config's limits."""
    principal = resolve_principal(config)
    return MemoryStore(
        principal.workspace_memories_dir(home),
        user_directory=principal.user_memories_dir(home),
        memory_char_limit=config.memory.memory_char_limit,
        user_char_limit=config.memory.user_char_limit,
    )


async def _seed_memory(home: Path, scenario: Scenario, config: KeelConfig) -> None:
    store = _store(config, home)
    for entry in scenario.initial_memory.memory:
        await store.add("memory", entry)
    for entry in scenario.initial_memory.user:
        await store.add("user", entry)


async def _out_of_band(store: MemoryStore, write: MemoryWriteSpec) -> None:
    if write.action == "add":
        await store.add(write.target, write.content)
    elif write.action == "replace":
        await store.replace(write.target, write.old_text, write.content)
    else:
        await store.remove(write.target, write.old_text)


async def _turn(session: Session, text: str) -> tuple[list[Event], float]:
    events: list[Event] = []
    started = time.monotonic()
    async with session.run_turn(text) as stream:
        async for ev in stream:
            events.append(ev)
    return events, time.monotonic() - started


def _answer(events: list[Event]) -> str:
    end = next((e for e in reversed(events) if isinstance(e, TurnEnded)), None)
    return end.final_text if end is not None else "".join(e.text for e in events if isinstance(e, TextDelta))


async def _play_turn(
    session: Session, n: int, turn: TurnSpec, other_writer: MemoryStore
) -> tuple[TurnStat, list[Event]]:
    """One scenario turn: the user message, out-of-band writes, a forced compression if asked."""
    before = session.calls.requests_sent
    events, wall = await _turn(session, turn.user)
    compressed = any(isinstance(e, CompressionFinished) and not e.aborted for e in events)
    for write in turn.memory_writes:
        await _out_of_band(other_writer, write)
    if turn.compress:
        events += await session.compress()
        compressed = True
    return TurnStat(n, wall, session.calls.requests_sent - before, compressed), events


async def _probe_results(
    scenario: Scenario, store: MemoryStore | None, summary: str, answers: dict[str, str]
) -> tuple[ProbeResult, ...]:
    """Where each planted fact survived: memory, the summary, the model's answer."""
    entries: list[str] = []
    if store is not None:
        await store.load()
        entries = [*store.entries("memory"), *store.entries("user")]
    return tuple(
        ProbeResult(
            fact=p.fact,
            keyword=p.keyword,
            in_memory=any(p.keyword.lower() in e.lower() for e in entries),
            in_summary=p.keyword.lower() in summary.lower(),
            in_answer=(p.keyword.lower() in answers[p.fact].lower()) if p.fact in answers else None,
        )
        for p in scenario.probes
    )


async def run_scenario(
    scenario: Scenario,
    config: KeelConfig,
    *,
    home: Path,
    label: str,
    model: ModelClient | None = None,
    scripted: bool = True,
    ask_probes: bool | None = None,
    progress: Progress | None = None,
    on_event: Callable[[int, Event], None] | None = None,
) -> RunResult:
    """Play `scenario` in a fresh keel home and measure it.

    Args:
        model: a real client; ignored when `scripted` (the scenario's replies are played).
        scripted: use `ScenarioModel` (deterministic, offline).
        ask_probes: ask each probe question at the end (default: only with a real model).
        progress: called with (turns done, turns total).
        on_event: called with (turn, event) for every event, for live displays.
    """
    cfg = apply_overrides(config, scenario.config)
    await anyio.to_thread.run_sync(lambda: home.mkdir(parents=True, exist_ok=True))
    await _seed_memory(home, scenario, cfg)
    scenario_model = ScenarioModel(scenario) if scripted else None
    client = scenario_model if scenario_model is not None else model
    ask = (not scripted) if ask_probes is None else ask_probes
    other_writer = _store(cfg, home)
    trace_path = home / "traces" / f"{label}.jsonl"
    stats: list[TurnStat] = []
    saved: list[str] = []
    answers: dict[str, str] = {}
    started = time.monotonic()
    async with open_session(
        cfg, SessionOptions(model=client, home=home, trace_path=trace_path, source="experiment")
    ) as session:
        total = len(scenario.turns)
        for n, turn in enumerate(scenario.turns, 1):
            if scenario_model is not None:
                scenario_model.begin_turn(n)
            stat, events = await _play_turn(session, n, turn, other_writer)
            stats.append(stat)
            for ev in events:
                if on_event is not None:
                    on_event(n, ev)
                if isinstance(ev, FlushCompleted):
                    saved.extend(f"{e.target}: {e.content}" for e in ev.entries if e.saved)
            if progress is not None:
                progress(n, total)
        summary = session.compressor.previous_summary or ""
        if ask:
            for probe in scenario.probes:
                events, _ = await _turn(session, probe.question)
                answers[probe.fact] = _answer(events)
    probes = await _probe_results(scenario, session.handles.store, summary, answers)
    return RunResult(
        label=label,
        home=home,
        trace_path=trace_path,
        turns=tuple(stats),
        probes=probes,
        flush_saved=tuple(saved),
        compressions=sum(1 for s in stats if s.compressed),
        wall_s=time.monotonic() - started,
    )
