"""The meter's report: totals, per purpose, provider-reported numbers, cost, JSON."""

from __future__ import annotations

import json

import pytest

from harness.cachemeter import (
    CanonicalRenderer,
    MeterError,
    MeterRequest,
    MeterRun,
    ReplicasAsk,
    SweepAsk,
    measure,
    replica_sweep,
    ttl_sweep,
)
from harness.cachemeter.render import Rendered
from harness.cachemeter.report._report import SCHEMA
from harness.config import PriceConfig
from harness.tokens import CharTokenizer
from harness.trace import TraceRecord, record_for_request
from harness.types import Message, ModelRequest, Purpose, Usage

SYSTEM = "You are keel. " * 200


def rec(
    messages: int, *, purpose: Purpose = "turn", model: str = "claude-sonnet-4-5-20250929"
) -> TraceRecord:
    msgs = tuple(Message("user", f"turn {k} " * 40) for k in range(messages))
    req = ModelRequest(system=SYSTEM, messages=msgs, purpose=purpose)
    usage = Usage(input=100, output=50, cache_read=400)
    return record_for_request(req, session_id="s", turn=messages, model=model, usage=usage, timestamp=0.0)


PRICES = {"claude-sonnet-4-5": PriceConfig(input=3.0, output=15.0, cache_write=1.25, cache_read=0.1)}


def test_totals_are_token_weighted_and_split_by_purpose() -> None:
    records = [rec(1), rec(2), rec(2, purpose="flush"), rec(3)]
    seen: list[int] = []
    report = measure(
        records, CanonicalRenderer(CharTokenizer()), simulators=("ideal", "vllm"), progress=seen.append
    )
    assert seen == [1, 2, 3, 4]
    prompt = [r.prompt_tokens for r in report.requests]
    ideal = [r.sims["ideal"].reusable for r in report.requests]
    assert ideal == [0, prompt[0], prompt[1], prompt[1]]  # the flush repeats #1 whole
    assert report.totals["ideal"].hit_ratio == pytest.approx(sum(ideal) / sum(prompt))
    assert report.hit_ratio("vllm") <= report.hit_ratio("ideal")
    turn, flush = report.by_purpose["turn"], report.by_purpose["flush"]
    assert (turn.requests, flush.requests) == (3, 1)
    assert flush.reusable["ideal"] == prompt[1]
    assert turn.prompt_tokens + flush.prompt_tokens == sum(prompt)
    assert report.totals["ideal"].reasons["none"].requests == 3


def test_provider_reported_cache_is_shown_beside_the_simulation() -> None:
    report = measure([rec(1), rec(2)], CanonicalRenderer(CharTokenizer()), simulators=("ideal",))
    assert report.reported is not None
    assert (report.reported.requests, report.reported.prompt_tokens, report.reported.cache_read) == (
        2,
        1000,
        800,
    )
    assert report.reported.hit_ratio == pytest.approx(0.8)
    assert report.requests[0].reported is not None
    assert report.requests[0].reported.cache_read == 400


def test_cost_uses_the_matching_price_and_its_cache_multipliers() -> None:
    report = measure(
        [rec(1), rec(2)], CanonicalRenderer(CharTokenizer()), simulators=("ideal",), prices=PRICES
    )
    n0, n1 = (r.prompt_tokens for r in report.requests)
    reused = report.requests[1].sims["ideal"].reusable
    assert [r.price for r in report.requests] == ["claude-sonnet-4-5", "claude-sonnet-4-5"]
    output = 2 * 50 * 15.0
    assert report.uncached_cost == pytest.approx(((n0 + n1) * 3.0 + output) / 1e6)
    expected = ((n0 + (n1 - reused)) * 3.0 + reused * 3.0 * 0.1 + output) / 1e6
    assert report.totals["ideal"].cost == pytest.approx(expected)
    assert report.unpriced_requests == 0


def test_unknown_models_are_left_unpriced_and_an_unknown_price_name_is_an_error() -> None:
    report = measure([rec(1, model="mystery")], CanonicalRenderer(CharTokenizer()), prices=PRICES)
    assert (report.unpriced_requests, report.uncached_cost, report.totals["ideal"].cost) == (1, None, None)
    forced = measure(
        [rec(1, model="mystery")],
        CanonicalRenderer(CharTokenizer()),
        prices=PRICES,
        price="claude-sonnet-4-5",
    )
    assert forced.requests[0].price == "claude-sonnet-4-5"
    with pytest.raises(MeterError, match="--price 'gpt-9' is not in the price table"):
        measure([rec(1)], CanonicalRenderer(CharTokenizer()), prices=PRICES, price="gpt-9")


def test_json_report_follows_the_documented_schema() -> None:
    report = measure([rec(1), rec(2)], CanonicalRenderer(CharTokenizer()), tokenizer="chars", prices=PRICES)
    data = json.loads(json.dumps(report.to_json()))
    assert data["schema"] == SCHEMA
    assert (data["renderer"], data["tokenizer"]) == ("canonical", "chars")
    assert data["simulators"] == [
        "ideal",
        "vllm",
        "sglang",
        "llamacpp",
        "llamacpp-ram",
        "openai",
        "anthropic",
        "keel",
    ]
    assert data["settings"]["block_size"] == 16
    first = data["requests"][1]
    assert set(first) == {
        "index", "line", "session_id", "turn", "purpose", "model", "timestamp", "gap", "ttl",
        "prompt_tokens", "reported", "price", "content", "sims", "warnings",
    }  # fmt: skip
    assert set(first["sims"]["vllm"]) == {
        "reusable",
        "write",
        "prefix",
        "source",
        "reason",
        "lost",
        "cost",
        "lost_cost",
        "warnings",
    }
    assert first["content"]["reason"] == "none"
    assert data["requests"][0]["sims"]["openai"]["reason"] == "first_request"
    assert set(data["totals"]["anthropic"]) == {
        "requests",
        "prompt_tokens",
        "reusable",
        "write",
        "hit_ratio",
        "write_ratio",
        "cost",
        "write_cost",
        "write_share",
        "reasons",
    }
    assert data["by_purpose"]["turn"]["sims"]["ideal"]["hit_ratio"] == report.by_purpose["turn"].hit_ratio(
        "ideal"
    )
    assert data["reported"]["cache_read"] == 800
    assert data["cost"]["unpriced_requests"] == 0


async def test_report_async_runs_the_meter_off_the_event_loop() -> None:
    run = MeterRun(CanonicalRenderer(CharTokenizer()))
    report = await run.report_async([rec(1), rec(2)], simulators=("ideal",))
    assert report.requests[1].sims["ideal"].reusable == report.requests[0].prompt_tokens


def test_one_run_gives_the_report_the_sweep_and_the_replicas_from_one_rendering() -> None:
    class Counting(CanonicalRenderer):
        renders = 0

        def render(self, req: MeterRequest) -> Rendered:
            Counting.renders += 1
            return super().render(req)

    records = [rec(1), rec(2), rec(3)]
    run = MeterRun(Counting(CharTokenizer()))
    results = run.measure(records, sweep=SweepAsk((60.0,), ("vllm",)), replicas=ReplicasAsk(counts=(1, 2)))
    assert Counting.renders == len(records)  # each request rendered once for all three views
    assert results.report is not None and results.report == measure(
        records, CanonicalRenderer(CharTokenizer())
    )
    renderer = CanonicalRenderer(CharTokenizer())
    assert results.sweep == ttl_sweep(records, renderer, ttls=(60.0,), simulators=("vllm",))
    assert results.replicas == replica_sweep(records, renderer, counts=(1, 2))
