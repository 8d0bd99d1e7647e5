"""The cache lifecycle controller on a tool-heavy replay with long gaps: cost, hits, re-writes.

    python benchmarks/cache_lifecycle.py [--sessions 40] [--turns 10] [--seed 7]

A seeded scenario of agent sessions: each user turn runs 1–4 tool iterations; a tool call
takes 10–90 s half the time and 2–15 minutes otherwise; between turns the user pauses 1–90
minutes (log-uniform). Every request is the session's prompt as token ids (system and
tools 6,000 tokens, a user message 150, a tool call 80, a tool result 1,500, an answer
300), with keel's Anthropic breakpoints (the system prompt and the last three messages).

It is replayed through the cache meter's clocked simulators — Anthropic with the 5-minute
and the 1-hour TTL, OpenAI with its 10-minute idle eviction — four ways: the controller
off; keep-warm only; compaction before expiry only; both. The controller decides with
`harness.lifecycle.policy.next_action` at each deadline of each wait, and its refreshes
(the last request again, one output token) and compactions (a summary request on the warm
prefix; the next turn starts from the summary) are fed to the same simulator, so they are
billed and can miss like any request. Printed per provider and arm: cost, hit ratio
(cached / prompt tokens, every request), re-written tokens (prefix tokens that had been
cached but expired), refreshes and compactions; the last line is
`anthropic_5m_cost_ratio R` (cost with the controller on — both parts — over off).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from benchmarks._util import script_parser
from harness.cachemeter.sim import AnthropicSimulator, OpenAISimulator, SimRequest, Simulator
from harness.config import KeelConfig
from harness.lifecycle import CacheEconomics, LifecycleSettings, WaitReason, economics_for, next_action

SYSTEM, USER, CALL, RESULT, ANSWER = 6_000, 150, 80, 1_500, 300
SUMMARY_PROMPT, SUMMARY_OUT = 200, 1_500
TOOL_OUT, ANSWER_OUT = 80, 300


@dataclass(frozen=True, slots=True)
class Step:
    """One model request of the scenario: sent `gap_s` after the previous one's reply."""

    gap_s: float
    wait: WaitReason
    adds: tuple[int, ...]
    """Message sizes appended before this request (the previous reply, tool results, the user)."""
    output: int


def scenario(rng: random.Random, turns: int) -> Iterator[Step]:
    """One session's requests."""
    for turn in range(turns):
        pause = 0.0 if turn == 0 else math.exp(rng.uniform(math.log(60), math.log(90 * 60)))
        adds: tuple[int, ...] = (USER,) if turn == 0 else (ANSWER, USER)
        iterations = rng.randint(1, 4)
        yield Step(pause, "user_idle", adds, TOOL_OUT)
        for i in range(iterations):
            tool_s = rng.uniform(10, 90) if rng.random() < 0.5 else rng.uniform(120, 900)
            yield Step(tool_s, "tool_wait", (CALL, RESULT), ANSWER_OUT if i == iterations - 1 else TOOL_OUT)


@dataclass(slots=True)
class Totals:
    cost: float = 0.0
    prompt: int = 0
    cached: int = 0
    rewritten: int = 0
    refreshes: int = 0
    compactions: int = 0


@dataclass(slots=True)
class Conversation:
    """A session's prompt as token ids, with its message boundaries."""

    base: int
    sizes: list[int] = field(default_factory=list)
    next_id: int = 0

    def tokens(self) -> tuple[bytes, tuple[int, ...]]:
        ids = np.concatenate(
            [np.arange(SYSTEM, dtype=np.uint32)]
            + [np.arange(s, dtype=np.uint32) + np.uint32(self.base + off) for s, off in self._offsets()]
        )
        ends = list(np.cumsum([SYSTEM, *self.sizes]))
        return ids.tobytes(), tuple(int(e) for e in ends)

    def _offsets(self) -> Iterator[tuple[int, int]]:
        start = 0
        for s in self.sizes:
            yield s, start
            start += s

    def request(self, model: str, at: float, ttl: Literal["5m", "1h"] | None) -> SimRequest:
        tokens, ends = self.tokens()
        breakpoints = (ends[0], *ends[1:][-3:])
        return SimRequest(
            tokens=tokens, model=model, timestamp=at, breakpoints=breakpoints, boundaries=ends, ttl=ttl
        )


def bill(sim: Simulator, econ: CacheEconomics, request: SimRequest, output: int, totals: Totals) -> int:
    step = sim.feed(request)
    n = request.n_tokens
    uncached = n - step.reusable - step.write
    totals.cost += econ.input_usd * (uncached + step.reusable * econ.read_mult + step.write * econ.write_mult)
    totals.cost += econ.output_usd * output
    totals.prompt += n
    totals.cached += step.reusable
    totals.rewritten += max(0, step.potential - step.reusable)
    return n


def replay(session: list[Step], index: int, provider: str, settings: LifecycleSettings) -> Totals:
    """One session through a fresh simulator, the controller deciding in every gap (ids are
    unique per session through `Conversation.base`)."""
    econ, model, ttl, sim = PROVIDERS[provider]()
    totals = Totals()
    convo = Conversation(base=1_000_000 * (index + 1))
    now, last_use, prefix, previous = 0.0, 0.0, 0, None
    for step in session:
        wait_started = now
        refreshes = 0
        while previous is not None:
            plan = next_action(
                econ, settings, reason=step.wait, wait_started=wait_started, last_use=last_use,
                prefix_tokens=prefix, refreshes=refreshes,
            )  # fmt: skip
            if plan is None or plan.at >= wait_started + step.gap_s:
                break
            if plan.action == "refresh":
                bill(sim, econ, replace(previous, timestamp=plan.at), 1, totals)
                totals.refreshes += 1
                refreshes += 1
                last_use = plan.at
                continue
            convo.sizes.append(SUMMARY_PROMPT)
            bill(sim, econ, convo.request(model, plan.at, ttl), SUMMARY_OUT, totals)
            totals.compactions += 1
            convo = Conversation(base=convo.base + 100_000, sizes=[SUMMARY_OUT])
            break
        now = wait_started + step.gap_s
        for size in step.adds:
            convo.sizes.append(size)
        previous = convo.request(model, now, ttl)
        prefix = bill(sim, econ, previous, step.output, totals)
        last_use = now
    return totals


def _anthropic(ttl: Literal["5m", "1h"]) -> tuple[CacheEconomics, str, Literal["5m", "1h"], Simulator]:
    model = "claude-sonnet-4-5"
    econ = economics_for("anthropic", model=model, cache_ttl=ttl, prices=KeelConfig().prices)
    return econ, model, ttl, AnthropicSimulator()


def _openai() -> tuple[CacheEconomics, str, None, Simulator]:
    model = "gpt-5.4"
    econ = economics_for("openai", model=model, cache_ttl="5m", prices=KeelConfig().prices)
    return econ, model, None, OpenAISimulator()


PROVIDERS = {
    "anthropic 5m": lambda: _anthropic("5m"),
    "anthropic 1h": lambda: _anthropic("1h"),
    "openai": _openai,
}

ARMS = {
    "off": LifecycleSettings(),
    "keep-warm": LifecycleSettings(keep_warm=True),
    "compact": LifecycleSettings(compact_before_expiry=True),
    "on (both)": LifecycleSettings(keep_warm=True, compact_before_expiry=True),
}


def main() -> None:
    parser = script_parser(__doc__, whole=True)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sessions = [list(scenario(rng, args.turns)) for _ in range(args.sessions)]
    requests = sum(len(s) for s in sessions)
    print(f"{args.sessions} sessions, {requests} turn requests, seed {args.seed}")
    header = f"{'provider':<13} {'arm':<10} {'cost $':>9} {'vs off':>7} {'hit ratio':>9} {'re-written':>11} {'refreshes':>9} {'compactions':>11}"
    print(header)
    ratio = 1.0
    for provider in PROVIDERS:
        base = None
        for arm, settings in ARMS.items():
            t = Totals()
            for i, session in enumerate(sessions):
                one = replay(session, i, provider, settings)
                t.cost += one.cost
                t.prompt += one.prompt
                t.cached += one.cached
                t.rewritten += one.rewritten
                t.refreshes += one.refreshes
                t.compactions += one.compactions
            base = t.cost if base is None else base
            print(
                f"{provider:<13} {arm:<10} {t.cost:>9.2f} {t.cost / base:>7.3f} {t.cached / t.prompt:>9.3f} "
                f"{t.rewritten:>11,} {t.refreshes:>9,} {t.compactions:>11,}"
            )
            if provider == "anthropic 5m" and arm == "on (both)":
                ratio = t.cost / base
    print(f"anthropic_5m_cost_ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
