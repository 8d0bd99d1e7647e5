"""The TTL sweep on a hand-made trace: one conversation with gaps of 100, 300, 100, 260 and 10 s.

A timeout of 250 s expires exactly the requests after the 300 s and the 260 s gaps; 30 s
expires every one after a gap over 30 s; an hour expires none. Keep-alive pings: ceil(gap/T) - 1
per idle gap.
"""

from __future__ import annotations

import pytest

from harness.cachemeter import CanonicalRenderer, MeterMessage, MeterRequest, SimName, TtlSweep, ttl_sweep
from harness.cachemeter.sweep import format_ttl, parse_ttls
from harness.cachemeter.sweep._sweep import DEFAULT_TTLS, TIME_AWARE
from harness.config import PriceConfig
from harness.errors import MeterError
from harness.tokens import CharTokenizer

TIMES = (0.0, 100.0, 400.0, 500.0, 760.0, 770.0)
PRICES = {
    "claude-sonnet-4-5": PriceConfig(
        input=3.0, output=15.0, cache_write=1.25, cache_write_1h=2.0, cache_read=0.1
    )
}


def _trace() -> list[MeterRequest]:
    system = "You are keel, a careful assistant. " * 200  # ~1,750 tokens at four characters a token
    out = []
    for k, t in enumerate(TIMES):
        messages = tuple(MeterMessage("user", f"question {j}: " + "why? " * 60) for j in range(k + 1))
        out.append(
            MeterRequest(
                kind="chat", model="claude-sonnet-4-5", system=system, messages=messages, timestamp=t
            )
        )
    return out


def _priced_sweep(simulator: SimName, ttls: tuple[float, ...]) -> TtlSweep:
    """The sweep of `_trace()` on one simulator at `ttls`, priced with `PRICES`."""
    return ttl_sweep(
        _trace(), CanonicalRenderer(CharTokenizer()), ttls=ttls, simulators=(simulator,), prices=PRICES
    )


def test_idle_misses_are_exactly_the_requests_after_a_gap_longer_than_the_timeout() -> None:
    sweep = ttl_sweep(_trace(), CanonicalRenderer(CharTokenizer()), ttls=(30, 250, 3600))
    assert sweep.simulators == TIME_AWARE
    for name in TIME_AWARE:
        short, mid, hour = sweep.rows[name]
        assert (short.idle_requests, mid.idle_requests, hour.idle_requests) == (4, 2, 0), name
        assert short.hit_ratio < mid.hit_ratio < hour.hit_ratio, name
        assert (short.keepalive_pings, mid.keepalive_pings, hour.keepalive_pings) == (
            3 + 9 + 3 + 8,
            1 + 1,
            0,
        ), name
    # as given: the servers never time out; OpenAI keeps 10 minutes; Anthropic's requests ask 5 minutes
    assert sweep.as_given["sglang"].idle_requests == 0
    assert sweep.as_given["openai"].idle_requests == 0  # no gap reaches 600 s
    assert sweep.as_given["anthropic"].idle_requests == 0  # 260 s and 300 s: within 5 minutes, just


def test_keep_alive_cost_and_savings_are_priced_exactly() -> None:
    sweep = _priced_sweep("sglang", (250,))
    (cell,) = sweep.rows["sglang"]
    assert cell.idle_requests == 2
    # each idle miss lost its whole shared prefix: processed at $3/M instead of read at $0.30/M
    assert cell.idle_cost == pytest.approx(cell.idle_lost * 0.9 * 3 / 1e6)
    assert cell.idle_cost is not None and cell.keepalive_cost is not None and cell.keepalive_cost > 0
    assert cell.keepalive_net == pytest.approx(cell.idle_cost - cell.keepalive_cost)
    # two pings of the prefix are cheaper than two full prefills
    assert cell.keepalive_net is not None and cell.keepalive_net > 0


def test_anthropic_one_hour_writes_are_billed_at_the_one_hour_price() -> None:
    sweep = _priced_sweep("anthropic", (300, 3600))
    five, hour = sweep.rows["anthropic"]
    assert five.write_cost == pytest.approx(five.write * 1.25 * 3 / 1e6)
    assert hour.write_cost == pytest.approx(hour.write * 2.0 * 3 / 1e6)


def test_timeouts_parse_with_units_and_print_back() -> None:
    assert parse_ttls("1h, 30s,5m,90") == (30.0, 90.0, 300.0, 3600.0)
    assert [format_ttl(t) for t in DEFAULT_TTLS] == ["30 s", "1 m", "2 m", "5 m", "10 m", "30 m", "1 h"]
    with pytest.raises(MeterError, match="'soon' is not a positive duration"):
        parse_ttls("5m,soon")


def test_a_sweep_without_a_clocked_simulator_is_refused() -> None:
    with pytest.raises(MeterError, match="needs a simulator with a clock"):
        ttl_sweep(_trace(), CanonicalRenderer(CharTokenizer()), simulators=("ideal",))


def test_the_anthropic_table_says_what_the_one_hour_ttl_would_have_cost() -> None:
    from rich.console import Console

    from harness.cachemeter.sweep import sweep_tables

    sweep = _priced_sweep("anthropic", (60, 3600))
    console = Console(width=300, record=True)
    for table in sweep_tables(sweep):
        console.print(table)
    text = console.export_text()
    hour, sent = sweep.rows["anthropic"][1].cost, sweep.as_given["anthropic"].cost
    assert hour is not None and sent is not None
    verb = "saves" if hour <= sent else "costs"
    assert f"the 1-hour TTL on every entry: ${hour:,.4f} instead of ${sent:,.4f} ({verb}" in text
