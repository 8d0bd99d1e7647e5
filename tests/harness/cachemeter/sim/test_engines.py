"""vLLM and SGLang rules, hand-computed (shared/reference/caching.md §2.5–2.7)."""

from __future__ import annotations

from harness.cachemeter.sim import SglangSimulator, VllmSimulator
from tests.harness.cachemeter.sim.simkit import req, seq


def test_vllm_rounds_a_33_token_match_down_to_two_blocks_of_16() -> None:
    sim = VllmSimulator(block_size=16)
    sim.feed(req(seq(33)))
    step = sim.feed(req([*seq(33), 900, 901]))
    assert step.reusable == 32


def test_vllm_always_recomputes_the_last_token() -> None:
    sim = VllmSimulator(block_size=16)
    sim.feed(req(seq(32)))
    # An exact repeat of 32 tokens: hits are floor((32 - 1) / 16) * 16 = 16, not 32.
    assert sim.feed(req(seq(32))).reusable == 16
    sim.feed(req(seq(33)))
    assert sim.feed(req(seq(33))).reusable == 32


def test_vllm_pool_evicts_a_requests_last_block_first() -> None:
    sim = VllmSimulator(block_size=4, budget_blocks=4)
    a = seq(9)  # two full blocks and a partial one: 3 of the 4 blocks
    sim.feed(req(a))
    sim.feed(req(seq(8, 100)))  # takes the last never-used block, then A's partial block
    sim.feed(req(seq(4, 200)))  # evicts the head of the free queue: A's LAST full block
    step = sim.feed(req(a, known_prefix=9))  # the meter tells it what an unlimited cache would share
    assert step.reusable == 4  # A's first block survived; its second was evicted first
    assert (step.loss, step.potential) == ("evicted", 8)


def test_vllm_without_budget_never_evicts() -> None:
    sim = VllmSimulator(block_size=4)
    a = seq(9)
    sim.feed(req(a))
    for k in range(20):
        sim.feed(req(seq(8, 100 * (k + 1))))
    assert sim.feed(req(a)).reusable == 8


def test_sglang_matches_token_by_token_and_recomputes_the_last_token() -> None:
    sim = SglangSimulator()
    sim.feed(req(seq(33)))
    assert sim.feed(req([*seq(33), 5])).reusable == 33
    assert sim.feed(req(seq(20))).reusable == 19


def test_sglang_budget_trims_the_least_recently_used_leaf() -> None:
    sim = SglangSimulator(budget_tokens=10)
    a, b = seq(6), seq(6, 100)
    sim.feed(req(a))
    sim.feed(req(b))  # 12 tokens > 10: A (older) loses its last 2 tokens
    assert sim.feed(req(a)).reusable == 4  # A is now the most recent; B loses 2
    assert sim.feed(req(b)).reusable == 4
