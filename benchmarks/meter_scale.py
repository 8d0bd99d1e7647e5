"""How fast the cache simulators are on a long synthetic trace, and that they scale linearly.

    PYTHONPATH=. python benchmarks/meter_scale.py [--requests N] [--budgets] [--idle S]

The trace is synthetic token ids (tokenization is skipped: simulators work on ids): several
interleaved agent sessions that grow by appending turns (user message, tool call, tool
result), with occasional memory-slot rewrites in the system prompt, and compressions when a
session passes ~10.5k tokens — a flush request with a different tool list, a summary request,
then the middle rewritten into a summary. Requests average about 8,000 tokens.

Every simulator runs with its clock on, as `keel cache report` runs them: the trace's
timestamps drive OpenAI's idle TTL and Anthropic's 5-minute entries, and the local servers drop
an entry unused for `--idle` seconds (default 600; 0 turns the servers' timeout off).
Each simulator runs once over the trace of N requests and three times (median) over one of
N/10; the script prints seconds per simulator, the totals, and the ratio (linear growth ≈ 10).
`--budgets` also times vLLM with a block pool and SGLang with a token budget (block-by-block
work). The last line is `seconds_10k <total seconds for all default simulators at N requests>`.
Run it from anywhere: this checkout's packages are put first on the import path.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median
from harness.cachemeter import SIM_NAMES, SimName, SimRequest, SimSettings, make_simulator

VOCAB = 100_000


@dataclass
class _Session:
    sid: int
    memory: np.ndarray
    line: np.ndarray
    messages: list[np.ndarray] = field(default_factory=list)
    requests_left: int = 0


class TraceGen:
    """Deterministic synthetic agent trace (see the module docstring)."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        self.tools = self.chunk(1500)
        self.flush_tools = self.chunk(250)
        self.identity = self.chunk(1200)
        self.flush_note = self.chunk(120)
        self.summary_prompt = self.chunk(400)
        self.clock = 1_700_000_000.0
        self.next_sid = 0

    def chunk(self, n: int) -> np.ndarray:
        return self.rng.integers(0, VOCAB, n, dtype=np.uint32)

    def size(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi))

    def new_session(self) -> _Session:
        self.next_sid += 1
        s = _Session(self.next_sid, self.chunk(350), self.chunk(30), requests_left=self.size(150, 400))
        s.messages.append(self.chunk(self.size(80, 300)))
        return s

    def request(self, tools: np.ndarray, s: _Session, extra: list[np.ndarray]) -> SimRequest:
        self.clock += float(self.rng.exponential(20.0))
        parts = [tools, self.identity, s.memory, s.line, *s.messages, *extra]
        tokens = np.concatenate(parts)
        # Content-block ends (tools, system, each message): Anthropic's automatic mode reads there.
        ends = np.cumsum([len(p) for p in parts])
        boundaries = (int(ends[0]), *(int(e) for e in ends[3:]))
        return SimRequest(tokens=tokens.tobytes(), model="m", timestamp=self.clock, boundaries=boundaries)

    def length(self, s: _Session) -> int:
        return (
            len(self.tools)
            + len(self.identity)
            + len(s.memory)
            + len(s.line)
            + sum(len(m) for m in s.messages)
        )

    def generate(self, count: int, *, interleave: int = 6) -> list[SimRequest]:
        out: list[SimRequest] = []
        sessions = [self.new_session() for _ in range(interleave)]
        while len(out) < count:
            k = int(self.rng.integers(0, len(sessions)))
            s = sessions[k]
            if self.rng.random() < 0.02:  # a memory write with invalidate-on-write: the slot changes
                s.memory = self.chunk(350)
            out.append(self.request(self.tools, s, []))
            # The reply: an assistant tool call and its result, or a final answer and a new user turn.
            if self.rng.random() < 0.6:
                s.messages += [self.chunk(self.size(40, 120)), self.chunk(self.size(150, 900))]
            else:
                s.messages += [self.chunk(self.size(60, 250)), self.chunk(self.size(30, 200))]
            if self.length(s) > 10_500:
                out.append(self.request(self.flush_tools, s, [self.flush_note]))
                out.append(self.request(self.tools, s, [self.summary_prompt]))
                head, tail = s.messages[:3], s.messages[-max(6, len(s.messages) // 5) :]
                s.messages = [*head, self.chunk(700), *tail]
                s.memory = self.chunk(350)
            s.requests_left -= 1
            if s.requests_left <= 0:
                sessions[k] = self.new_session()
        return out[:count]


def run(trace: list[SimRequest], name: SimName, settings: SimSettings) -> tuple[float, float]:
    """Seconds to feed the whole trace, and the token-weighted hit ratio."""
    sim = make_simulator(name, settings=settings)
    hits = 0
    start = time.perf_counter()
    for req in trace:
        hits += sim.feed(req).reusable
    seconds = time.perf_counter() - start
    total = sum(r.n_tokens for r in trace)
    return seconds, hits / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--budgets", action="store_true", help="also time the LRU-budget variants")
    parser.add_argument("--idle", type=float, default=600.0, help="servers' idle timeout in s (0: none)")
    args = parser.parse_args()
    big = args.requests
    small = max(1, big // 10)
    traces = {}
    for size in (small, big):
        t0 = time.perf_counter()
        traces[size] = TraceGen().generate(size)
        tokens = sum(r.n_tokens for r in traces[size])
        print(
            f"trace {size:,} requests: {tokens:,} tokens, {tokens / size:,.0f} avg per request "
            f"(generated in {time.perf_counter() - t0:.1f}s)"
        )
    idle = args.idle if args.idle > 0 else None
    default = SimSettings(server_idle_s=idle)
    print(f"servers' idle timeout: {'none' if idle is None else f'{idle:g} s'}")
    variants: list[tuple[str, SimName, SimSettings]] = [(n, n, default) for n in SIM_NAMES]
    if args.budgets:
        variants += [
            ("vllm(budget 20k blocks)", "vllm", SimSettings(vllm_budget_blocks=20_000, server_idle_s=idle)),
            (
                "sglang(budget 320k tok)",
                "sglang",
                SimSettings(sglang_budget_tokens=320_000, server_idle_s=idle),
            ),
        ]
    totals = {small: 0.0, big: 0.0}
    print(f"{'simulator':<26}{f'{small:,} req (s)':>14}{f'{big:,} req (s)':>15}{'ratio':>8}{'hit ratio':>11}")
    for label, name, settings in variants:
        s_small = median([run(traces[small], name, settings)[0] for _ in range(3)])
        s_big, ratio = run(traces[big], name, settings)
        if settings is default:
            totals[small] += s_small
            totals[big] += s_big
        print(f"{label:<26}{s_small:>14.3f}{s_big:>15.3f}{s_big / s_small:>8.1f}{ratio:>11.1%}")
    growth = totals[big] / totals[small]
    print(f"{'all default simulators':<26}{totals[small]:>14.3f}{totals[big]:>15.3f}{growth:>8.1f}")
    print(f"seconds_10k {totals[big]:.3f}")


if __name__ == "__main__":
    main()
