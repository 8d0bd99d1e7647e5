"""Time: every simulator with a timeout loses exactly the requests that came after a longer gap.

One conversation grows by 200 tokens a request; the gaps between requests are 100 s, 300 s,
100 s, 260 s, 10 s, and every simulator runs with a 250 s timeout. So requests 2 and 4 (after
300 s and 260 s) find their prefix expired and everything else finds it warm; the expected
numbers below are worked out by hand from each simulator's rounding rule.
"""

from __future__ import annotations

import pytest

from harness.cachemeter.sim import (
    AnthropicSimulator,
    IdealSimulator,
    LlamaCppRamSimulator,
    LlamaCppSimulator,
    OpenAISimulator,
    SglangSimulator,
    SimSettings,
    Simulator,
    VllmSimulator,
    make_simulator,
)
from tests.harness.cachemeter.sim.simkit import req, seq

TIMES = (0.0, 100.0, 400.0, 500.0, 760.0, 770.0)
SIZES = (2000, 2200, 2400, 2600, 2800, 3000)
EXPIRED = (2, 4)  # after the 300 s and the 260 s gap


def _feed(sim: Simulator) -> list[tuple[int, str | None, int]]:
    out: list[tuple[int, str | None, int]] = []
    for k, (t, n) in enumerate(zip(TIMES, SIZES, strict=True)):
        boundaries = SIZES[: k + 1]  # every earlier request's end is a content-block end here
        step = sim.feed(req(seq(n), model="claude-sonnet-4-5", timestamp=t, boundaries=boundaries))
        out.append((step.reusable, step.loss, step.potential))
    return out


@pytest.mark.parametrize(
    ("sim", "warm"),
    [
        # last token always recomputed; 2000, 2400, 2800 are whole 16-token blocks
        (VllmSimulator(idle_s=250), (0, 2000, 0, 2400, 0, 2800)),
        (VllmSimulator(idle_s=250, budget_blocks=10_000), (0, 2000, 0, 2400, 0, 2800)),
        (SglangSimulator(idle_s=250), (0, 2000, 0, 2400, 0, 2800)),
        (SglangSimulator(idle_s=250, budget_tokens=100_000), (0, 2000, 0, 2400, 0, 2800)),
        (LlamaCppSimulator(idle_s=250), (0, 2000, 0, 2400, 0, 2800)),
        (LlamaCppRamSimulator(idle_s=250), (0, 2000, 0, 2400, 0, 2800)),
        # 1,024 + 128-token steps: 2000 → 1920, 2400 → 2304, 2800 → 2688
        (OpenAISimulator(ttl_s=250), (0, 1920, 0, 2304, 0, 2688)),
        # reads at the previous request's end (automatic mode's lookback), never after expiry
        (AnthropicSimulator(ttl_s=250), (0, 2000, 0, 2400, 0, 2800)),
    ],
    ids=["vllm", "vllm-pool", "sglang", "sglang-budget", "llamacpp", "llamacpp-ram", "openai", "anthropic"],
)
def test_requests_after_a_gap_longer_than_the_timeout_find_their_prefix_expired(
    sim: Simulator, warm: tuple[int, ...]
) -> None:
    steps = _feed(sim)
    assert tuple(s[0] for s in steps) == warm
    for k, (_, loss, potential) in enumerate(steps):
        if k in EXPIRED:
            assert loss == "ttl_expired"
            assert potential > 0  # what a warm cache would have served
        else:
            assert loss is None


def test_the_ideal_ceiling_has_no_clock() -> None:
    steps = _feed(IdealSimulator())
    assert [s[0] for s in steps] == [0, *SIZES[:-1]]


def test_anthropic_bills_a_full_rewrite_after_an_expiry() -> None:
    sim = AnthropicSimulator(ttl_s=250)
    writes = []
    for k, (t, n) in enumerate(zip(TIMES, SIZES, strict=True)):
        step = sim.feed(req(seq(n), model="claude-sonnet-4-5", timestamp=t, boundaries=SIZES[: k + 1]))
        writes.append(step.write)
    assert writes == [2000, 200, 2400, 200, 2800, 200]


def test_without_a_timeout_the_same_trace_never_expires() -> None:
    for name in ("vllm", "sglang", "llamacpp", "llamacpp-ram"):
        steps = _feed(make_simulator(name, settings=SimSettings()))
        assert all(loss is None for _, loss, _ in steps), name


def test_settings_carry_the_server_idle_timeout_and_the_anthropic_ttl() -> None:
    settings = SimSettings(server_idle_s=250, anthropic_ttl_s=250, openai_ttl_s=250)
    for name in ("vllm", "sglang", "llamacpp", "llamacpp-ram", "openai", "anthropic"):
        steps = _feed(make_simulator(name, settings=settings))
        assert [k for k, (_, loss, _) in enumerate(steps) if loss == "ttl_expired"] == list(EXPIRED), name


def test_a_request_without_a_timestamp_comes_when_the_previous_one_did() -> None:
    sim = SglangSimulator(idle_s=250)
    sim.feed(req(seq(100), timestamp=0.0))
    sim.feed(req(seq(120)))  # no timestamp: still at 0 s, so it refreshes the prefix at 0 s
    late = sim.feed(req(seq(140), timestamp=300.0))
    assert (late.reusable, late.loss) == (0, "ttl_expired")


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="idle_s must be a positive number"):
        SglangSimulator(idle_s=0)
