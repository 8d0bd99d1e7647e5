"""OpenAI and Anthropic rules, hand-computed (shared/reference/caching.md §2.1–2.2)."""

from __future__ import annotations

import pytest

from harness.cachemeter.sim import AnthropicSimulator, OpenAISimulator
from harness.cachemeter.sim._providers import anthropic_min_tokens
from tests.harness.cachemeter.sim.simkit import req, seq

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
