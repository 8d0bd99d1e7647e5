"""What OpenTelemetry export costs a turn: harness time per turn with export off and on.

The session of `turn_overhead.py` (a scripted model that answers instantly, no store, no
trace) over a 10- and a 1,000-message history, run side by side in one process: export off
(`NO_TELEMETRY`), and export on — the real pipeline `open_session` builds from
`telemetry.otlp_endpoint`: records queued by the loop, the worker thread turning them into
SDK spans with the cache attribution, the SDK's batch processor and OTLP/HTTP exporter
sending protobuf to a receiver in another process (`harness.testing.otlp_receiver`) — and
export off a second time, a control that shows how far two identical arms drift apart on
this machine. The arms alternate in many short rounds, each round in a rotated order, so
drifting machine load hits all of them alike; the load average is printed before and after.

Printed per history size: the median and mean harness time per turn of each arm; the added
time as a share of a turn (the goal: at most 10%), as the median over rounds of each round's
on/off ratio of medians (paired, so load that drifts between rounds cancels) and over all
turns pooled; the loop thread's own CPU per turn (`time.thread_time`: what runs on the
turn's path, without waits for the CPU); and the CPU the export spent off the turn's path
(process CPU per turn on minus off, the worker and exporter threads included, measured
through a final flush) — work done while a real turn waits for its model.

    python benchmarks/telemetry_overhead.py [--turns 100] [--rounds 20]

The last line printed is `added_share_at_1000 <value>` (the paired median share).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median, script_parser
from benchmarks.turn_overhead import bench_session, timed_turn
from harness.config import TelemetryConfig
from harness.telemetry import NO_TELEMETRY, Telemetry
from harness.telemetry._export import Export
from harness.telemetry.settings import export_settings

SIZES = (10, 1000)


@dataclass
class Arm:
    """What one arm measured: per-turn wall times and the loop thread's CPU per turn (the
    first turn of each session dropped: cold caches), per-round medians, and process CPU."""

    telemetry: Telemetry
    wall: list[float] = field(default_factory=list)
    loop_cpu: list[float] = field(default_factory=list)
    round_wall: list[float] = field(default_factory=list)
    process_cpu: float = 0.0


async def _run(n: int, turns: int, arm: Arm) -> None:
    cpu = time.process_time()
    wall: list[float] = []
    async with bench_session(n, turns, telemetry=arm.telemetry) as session:
        for turn in range(turns + 1):
            on_loop = time.thread_time()
            took = await timed_turn(session, f"next question {turn}")
            if turn:
                wall.append(took)
                arm.loop_cpu.append(time.thread_time() - on_loop)
    await arm.telemetry.flush()  # the export's share of the work, all of it
    arm.process_cpu += time.process_time() - cpu
    arm.wall += wall
    arm.round_wall.append(median(wall))


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def _paired(arm: Arm, base: Arm) -> float:
    """The median over rounds of `arm`'s median turn over `base`'s, minus one."""
    return median([a / b - 1 for a, b in zip(arm.round_wall, base.round_wall, strict=True)])


async def _size(n: int, turns: int, rounds: int, on: Telemetry) -> float:
    off, export, control = Arm(NO_TELEMETRY), Arm(on), Arm(NO_TELEMETRY)
    arms = [off, export, control]
    print(f"history {n:>5} messages, {rounds} rounds × {turns} turns per arm; {_load()}")
    for i in range(rounds):
        for arm in arms[i % 3 :] + arms[: i % 3]:
            await _run(n, turns, arm)
    for name, arm in (("export off", off), ("export on", export), ("off again", control)):
        print(
            f"  {name + ':':<11} median {median(arm.wall) * 1e3:.3f} ms  mean {statistics.fmean(arm.wall) * 1e3:.3f} ms"
            f" per turn; the loop thread's CPU: median {median(arm.loop_cpu) * 1e3:.3f} ms"
        )
    m_off, m_on = median(off.wall), median(export.wall)
    share = _paired(export, off)
    print(
        f"  added: {share * 100:+.1f}% of a turn's harness time (paired median over rounds);"
        f" pooled medians {(m_on - m_off) * 1e3:+.4f} ms = {(m_on / m_off - 1) * 100:+.1f}%"
    )
    print(f"  control, off again vs off: {_paired(control, off) * 100:+.1f}% (paired) — the noise floor")
    background = (export.process_cpu - off.process_cpu) / (rounds * (turns + 1)) * 1e3
    print(f"  export CPU off the turn's path: {background:.3f} ms per turn (worker + exporter threads)")
    print(f"  after: {_load()}")
    return share


async def main(turns: int, rounds: int, endpoint: str) -> float:
    settings = export_settings(TelemetryConfig(otlp_endpoint=endpoint), {})
    assert settings is not None
    export = Export.start(settings)
    share = 0.0
    try:
        for n in SIZES:
            share = await _size(n, turns, rounds, export.telemetry)
    finally:
        await anyio.to_thread.run_sync(export.close)
    return share


if __name__ == "__main__":
    parser = script_parser(__doc__)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        receiver = subprocess.Popen(
            [sys.executable, "-m", "harness.testing.otlp_receiver", str(Path(tmp) / "received.jsonl")],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert receiver.stdout is not None
            port = int(receiver.stdout.readline())
            result = anyio.run(main, args.turns, args.rounds, f"http://127.0.0.1:{port}")
        finally:
            receiver.terminate()
            receiver.wait(timeout=10)
    print(f"added_share_at_1000 {result:.4f}")
