"""Hand-computed cases for every simulator rule (shared/reference/caching.md)."""

from __future__ import annotations

import pytest

from harness.cachemeter import SimRequest, pack
from harness.cachemeter.sim import (
    AnthropicSimulator,
    IdealSimulator,
    LlamaCppRamSimulator,
    LlamaCppSimulator,
    OpenAISimulator,
    SglangSimulator,
    VllmSimulator,
    anthropic_min_tokens,
    parse_sim_names,
)


def req(tokens: list[int], **kw: object) -> SimRequest:
    return SimRequest(tokens=pack(tokens), **kw)  # type: ignore[arg-type]  # test helper forwards fields


def seq(n: int, start: int = 0) -> list[int]:
    return list(range(start, start + n))


# ---------------------------------------------------------------- ideal


def test_ideal_reuses_the_longest_prefix_shared_with_any_earlier_request() -> None:
    sim = IdealSimulator()
    sim.feed(req(seq(50)))
    sim.feed(req(seq(10, 1000)))
    step = sim.feed(req([*seq(30), 7, 7]))
    assert (step.reusable, step.source) == (30, 0)


def test_ideal_counts_an_exact_repeat_in_full() -> None:
    sim = IdealSimulator()
    sim.feed(req(seq(40)))
    assert sim.feed(req(seq(40))).reusable == 40


# ---------------------------------------------------------------- vllm


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


# ---------------------------------------------------------------- sglang


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


# ---------------------------------------------------------------- llama.cpp


def test_llamacpp_single_slot_loses_a_prompt_to_an_interleaved_one() -> None:
    sim = LlamaCppSimulator()
    a, b = seq(100), seq(100, 500)
    steps = [sim.feed(req(a)), sim.feed(req(b)), sim.feed(req(a))]
    assert [s.reusable for s in steps] == [0, 0, 0]


def test_llamacpp_ram_cache_resumes_from_the_best_saved_state() -> None:
    sim = LlamaCppRamSimulator(states=4)
    a, b = seq(100), seq(100, 500)
    steps = [sim.feed(req(a)), sim.feed(req(b)), sim.feed(req(a))]
    assert [s.reusable for s in steps] == [0, 0, 99]
    assert steps[2].source == 0


def test_llamacpp_ram_cache_with_one_state_behaves_like_one_slot() -> None:
    sim = LlamaCppRamSimulator(states=1)
    a, b = seq(100), seq(100, 500)
    sim.feed(req(a))
    sim.feed(req(b))
    assert sim.feed(req(a)).reusable == 0


def test_llamacpp_reuses_the_common_prefix_with_the_previous_prompt() -> None:
    sim = LlamaCppSimulator()
    sim.feed(req(seq(100)))
    assert sim.feed(req([*seq(60), 9, 9, 9])).reusable == 60


# ---------------------------------------------------------------- openai


def test_openai_caches_nothing_below_1024_tokens() -> None:
    sim = OpenAISimulator()
    sim.feed(req(seq(1023)))
    assert sim.feed(req(seq(1023))).reusable == 0
    other = OpenAISimulator()
    other.feed(req(seq(1024)))
    assert other.feed(req(seq(1024))).reusable == 1024


@pytest.mark.parametrize(("shared", "hits"), [(1151, 1024), (1152, 1152), (1279, 1152), (1280, 1280)])
def test_openai_counts_hits_in_128_token_steps(shared: int, hits: int) -> None:
    sim = OpenAISimulator()
    sim.feed(req(seq(2000)))
    assert sim.feed(req(seq(shared) + [99_999] * 10)).reusable == hits


def test_openai_prefix_expires_after_the_idle_ttl() -> None:
    sim = OpenAISimulator(ttl_s=600)
    sim.feed(req(seq(2048), timestamp=0.0))
    step = sim.feed(req(seq(2048), timestamp=601.0))
    assert step.reusable == 0
    assert (step.loss, step.potential) == ("ttl_expired", 2048)


def test_openai_hit_refreshes_the_idle_ttl() -> None:
    sim = OpenAISimulator(ttl_s=600)
    sim.feed(req(seq(2048), timestamp=0.0))
    assert sim.feed(req(seq(2048), timestamp=500.0)).reusable == 2048
    assert sim.feed(req(seq(2048), timestamp=1000.0)).reusable == 2048


# ---------------------------------------------------------------- anthropic

SONNET = "claude-sonnet-4-5"


def test_anthropic_reads_a_breakpoint_prefix_written_earlier_and_bills_the_write() -> None:
    sim = AnthropicSimulator()
    first = sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=0.0))
    second = sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=60.0))
    assert (first.reusable, first.write) == (0, 1200)
    assert (second.reusable, second.write) == (1200, 0)


def test_anthropic_reads_only_at_breakpoints() -> None:
    sim = AnthropicSimulator()
    blocks = (1200, 1300, 1500)
    sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), boundaries=blocks, timestamp=0.0))
    step = sim.feed(req(seq(1500), model=SONNET, breakpoints=(1300,), boundaries=blocks, timestamp=1.0))
    assert (step.reusable, step.write) == (0, 1300)
    assert step.policy == "no_breakpoint"  # an entry sat at 1200, a block end without a breakpoint


def test_anthropic_five_minute_entry_expires_without_a_hit() -> None:
    sim = AnthropicSimulator()
    sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=0.0))
    step = sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=301.0))
    assert (step.reusable, step.write, step.loss) == (0, 1200, "ttl_expired")


def test_anthropic_hit_refreshes_the_ttl() -> None:
    sim = AnthropicSimulator()
    sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=0.0))
    assert sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=200.0)).reusable == 1200
    assert sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=450.0)).reusable == 1200


def test_anthropic_one_hour_entries_outlive_five_minutes() -> None:
    sim = AnthropicSimulator()
    sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=0.0, ttl="1h"))
    assert sim.feed(req(seq(1500), model=SONNET, breakpoints=(1200,), timestamp=3000.0)).reusable == 1200


def test_anthropic_reports_more_than_four_breakpoints_and_uses_the_first_four() -> None:
    sim = AnthropicSimulator()
    five = (1100, 1200, 1300, 1400, 1500)
    step = sim.feed(req(seq(1600), model=SONNET, breakpoints=five, timestamp=0.0))
    assert step.warnings
    assert "5 cache_control breakpoints" in step.warnings[0]
    assert step.write == 1400  # the fifth breakpoint was not written
    assert sim.feed(req(seq(1600), model=SONNET, breakpoints=(1500,), timestamp=1.0)).reusable == 0
    assert sim.feed(req(seq(1600), model=SONNET, breakpoints=(1400,), timestamp=2.0)).reusable == 1400


def test_anthropic_never_caches_below_the_model_minimum() -> None:
    sim = AnthropicSimulator()
    first = sim.feed(req(seq(1100), model=SONNET, breakpoints=(1000,), timestamp=0.0))
    second = sim.feed(req(seq(1100), model=SONNET, breakpoints=(1000,), timestamp=1.0))
    assert (first.write, second.reusable, second.policy) == (0, 0, "below_minimum")


def test_anthropic_minimum_depends_on_the_model() -> None:
    sim = AnthropicSimulator()
    haiku = "claude-3-5-haiku-20241022"
    sim.feed(req(seq(2100), model=haiku, breakpoints=(1500,), timestamp=0.0))
    assert sim.feed(req(seq(2100), model=haiku, breakpoints=(1500,), timestamp=1.0)).reusable == 0
    sim.feed(req(seq(2100), model=haiku, breakpoints=(2050,), timestamp=2.0))
    assert sim.feed(req(seq(2100), model=haiku, breakpoints=(2050,), timestamp=3.0)).reusable == 2050


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-sonnet-4-5-20250929", 1024),
        ("claude-opus-4-1", 1024),
        ("claude-3-haiku-20240307", 2048),
        ("claude-opus-4-7", 2048),
        ("claude-haiku-4-5", 4096),
        ("claude-opus-4-6", 4096),
        ("claude-opus-5", 512),
        ("some-other-model", 1024),
    ],
)
def test_anthropic_minimum_table(model: str, minimum: int) -> None:
    assert anthropic_min_tokens(model) == minimum


def test_anthropic_automatic_mode_reads_an_earlier_end_through_the_lookback() -> None:
    sim = AnthropicSimulator()
    first = sim.feed(req(seq(1300), model=SONNET, boundaries=(1100, 1300), timestamp=0.0))
    second = sim.feed(req(seq(1500), model=SONNET, boundaries=(1100, 1300, 1500), timestamp=5.0))
    assert (first.reusable, first.write) == (0, 1300)
    assert (second.reusable, second.write) == (1300, 200)


# ---------------------------------------------------------------- all


@pytest.mark.parametrize("name", ["ideal", "vllm", "sglang", "llamacpp", "llamacpp-ram", "openai"])
def test_caches_are_per_model(name: str) -> None:
    from harness.cachemeter import make_simulator

    sim = make_simulator(parse_sim_names(name)[0])
    sim.feed(req(seq(3000), model="a"))
    assert sim.feed(req(seq(3000), model="b")).reusable == 0
    assert sim.feed(req(seq(3000), model="a")).reusable > 0


def test_parse_sim_names_rejects_an_unknown_name_and_lists_the_valid_ones() -> None:
    assert parse_sim_names("vllm, ideal,vllm") == ("vllm", "ideal")
    assert len(parse_sim_names("all")) == 7
    with pytest.raises(ValueError, match=r"unknown simulator 'vlm'.*vllm"):
        parse_sim_names("vlm")
