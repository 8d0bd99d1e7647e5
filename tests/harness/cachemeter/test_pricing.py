"""Costs: exact dollars from known prices and counts, the TTL of a write, what a miss cost, write share."""

from __future__ import annotations

import pytest

from harness.cachemeter import CanonicalRenderer, MeterMessage, MeterReport, MeterRequest, SimName, measure
from harness.cachemeter.pricing import Pricer, request_cost
from harness.config import PriceConfig
from harness.tokens import CharTokenizer

SONNET = PriceConfig(input=3.0, output=15.0, cache_write=1.25, cache_write_1h=2.0, cache_read=0.1)
TABLE = {"claude-sonnet-4-5": SONNET}


def test_a_request_costs_its_uncached_input_reads_writes_and_output() -> None:
    # 1,000 uncached + 6,000 read at 0.1 + 3,000 written at 1.25, at $3/M; 500 output at $15/M
    cost = request_cost(SONNET, prompt=10_000, reusable=6_000, write=3_000, output=500)
    assert cost == pytest.approx((1_000 + 600 + 3_750) * 3 / 1e6 + 500 * 15 / 1e6)
    assert cost == pytest.approx(0.02355)


def test_a_one_hour_write_is_billed_at_its_own_rate() -> None:
    cost = request_cost(SONNET, prompt=10_000, reusable=6_000, write=3_000, output=500, ttl="1h")
    assert cost == pytest.approx((1_000 + 600 + 6_000) * 3 / 1e6 + 500 * 15 / 1e6)


def test_a_miss_costs_what_reading_the_lost_tokens_would_have_saved() -> None:
    pricer = Pricer(TABLE)
    entry = pricer.pick("claude-sonnet-4-5-20250929")
    assert entry == "claude-sonnet-4-5"
    # 4,000 tokens were written again instead of read: 4,000 × (1.25 − 0.1) × $3/M
    lost = pricer.lost(entry, prompt=10_000, reusable=1_000, write=9_000, lost=4_000)
    assert lost == pytest.approx(4_000 * 1.15 * 3 / 1e6)
    # without cache writes (a server, OpenAI): processed at 1.0 instead of read at 0.1
    assert pricer.lost(entry, prompt=10_000, reusable=1_000, write=0, lost=4_000) == pytest.approx(
        4_000 * 0.9 * 3 / 1e6
    )
    assert pricer.lost(None, prompt=10, reusable=0, write=0, lost=5) is None


def _rewriting_trace(n: int) -> list[MeterRequest]:
    # Every request carries a new system prompt: nothing can be read, everything is written again.
    return [
        MeterRequest(
            kind="chat",
            model="claude-sonnet-4-5",
            system=f"You are keel, version {k}. " + "Stable instructions. " * 300,
            messages=(MeterMessage("user", "hello " * 50),),
            timestamp=float(k),
        )
        for k in range(n)
    ]


def _measured(requests: int, simulator: SimName) -> MeterReport:
    """`_rewriting_trace(requests)` on one simulator, priced from `TABLE`."""
    return measure(
        _rewriting_trace(requests), CanonicalRenderer(CharTokenizer()), simulators=(simulator,), prices=TABLE
    )


def test_a_write_heavy_trace_shows_its_write_share() -> None:
    report = _measured(5, "anthropic")
    t = report.totals["anthropic"]
    assert t.reusable == 0
    assert t.write == sum(r.sims["anthropic"].write for r in report.requests)
    assert t.write_ratio == t.write / t.prompt_tokens
    assert t.write_ratio > 0.9  # automatic mode writes up to the end of the last message
    assert t.write_cost == pytest.approx(t.write * 1.25 * 3 / 1e6)
    assert t.cost is not None and t.write_cost is not None
    assert t.write_share == pytest.approx(t.write_cost / t.cost)
    # nearly all the money went to cache writes, none to reads
    assert t.write_share is not None and t.write_share > 0.9


def test_a_miss_reason_carries_its_dollars_in_the_totals() -> None:
    report = _measured(3, "vllm")
    changed = report.totals["vllm"].reasons["system_changed"]
    rows = [r.sims["vllm"] for r in report.requests if r.sims["vllm"].reason.kind == "system_changed"]
    assert changed.requests == len(rows) == 2
    assert changed.lost == sum(s.reason.lost for s in rows)
    # vLLM bills no writes: each lost token was processed at $3/M instead of read at $0.30/M
    assert changed.cost == pytest.approx(changed.lost * 0.9 * 3 / 1e6)
