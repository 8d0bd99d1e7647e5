"""What OpenTelemetry export costs a turn: harness time per turn with export off and on.

The session of `turn_overhead.py` (a scripted model that answers instantly, no store, no
trace) over a 10- and a 1,000-message history, run twice side by side in one process: export
off (`NO_TELEMETRY`), and export on — the real pipeline `open_session` builds from
`telemetry.otlp_endpoint`: records queued by the loop, the worker thread turning them into
SDK spans with the cache attribution, the SDK's batch processor and OTLP/HTTP exporter
sending protobuf to a receiver in another process (`harness.testing.otlp_receiver`). The two
alternate in rounds so drifting machine load hits both alike.

Printed per history size: the median and mean harness time per turn off and on, the added
time as a share of a turn (the goal: at most 10%), and the CPU the export spent off the
turn's path (process CPU per turn on minus off, the worker and exporter threads included,
measured through a final flush) — work done while a real turn waits for its model.

    python benchmarks/telemetry_overhead.py [--turns 300] [--rounds 6]

The last line printed is `added_share_at_1000 <value>`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
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


async def _run(n: int, turns: int, telemetry: Telemetry) -> tuple[list[float], float]:
    """Per-turn wall times (the first turn dropped: cold caches), and process CPU for all of it."""
    cpu = time.process_time()
    samples: list[float] = []
    async with bench_session(n, turns, telemetry=telemetry) as session:
        for turn in range(turns + 1):
            took = await timed_turn(session, f"next question {turn}")
            if turn:
                samples.append(took)
    await telemetry.flush()  # the export's share of the work, all of it
    return samples, time.process_time() - cpu


async def main(turns: int, rounds: int, endpoint: str) -> float:
    settings = export_settings(TelemetryConfig(otlp_endpoint=endpoint), {})
    assert settings is not None
    export = Export.start(settings)
    share = 0.0
    try:
        for n in SIZES:
            off: list[float] = []
            on: list[float] = []
            cpu_off = cpu_on = 0.0
            for _ in range(rounds):
                samples, cpu = await _run(n, turns, NO_TELEMETRY)
                off.extend(samples)
                cpu_off += cpu
                samples, cpu = await _run(n, turns, export.telemetry)
                on.extend(samples)
                cpu_on += cpu
            m_off, m_on = median(off) * 1e3, median(on) * 1e3
            share = (m_on - m_off) / m_off
            background = (cpu_on - cpu_off) / (rounds * (turns + 1)) * 1e3
            print(f"history {n:>5} messages, {rounds}×{turns} turns each:")
            print(f"  export off: median {m_off:.3f} ms  mean {statistics.fmean(off) * 1e3:.3f} ms per turn")
            print(f"  export on:  median {m_on:.3f} ms  mean {statistics.fmean(on) * 1e3:.3f} ms per turn")
            print(f"  added: {m_on - m_off:+.4f} ms per turn = {share * 100:+.1f}% of a turn's harness time")
            print(
                f"  export CPU off the turn's path: {background:.3f} ms per turn (worker + exporter threads)"
            )
    finally:
        await anyio.to_thread.run_sync(export.close)
    return share


if __name__ == "__main__":
    parser = script_parser(__doc__)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
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
