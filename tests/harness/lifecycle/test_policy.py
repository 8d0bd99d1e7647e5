"""`harness.lifecycle.policy`: when to refresh, when to compact, when to let the prefix go."""

from __future__ import annotations

from typing import Literal

from harness.config import KeelConfig
from harness.lifecycle.economics import CacheEconomics, economics_for
from harness.lifecycle.policy import LifecycleSettings, next_action

PREFIX = 50_000


def sonnet(ttl: Literal["5m", "1h"] = "5m") -> CacheEconomics:
    return economics_for(
        "anthropic", model="claude-sonnet-4-5-20250929", cache_ttl=ttl, prices=KeelConfig().prices
    )


def refreshes_in(
    econ: CacheEconomics, settings: LifecycleSettings, wait_s: float, reason: str = "tool_wait"
) -> int:
    """Refreshes the policy sends during one wait of `wait_s` that starts at the last use."""
    done, last = 0, 0.0
    while (plan := next_action(econ, settings, reason=reason, wait_started=0.0, last_use=last,  # type: ignore[arg-type]
                               prefix_tokens=PREFIX, refreshes=done)) is not None and plan.at < wait_s:  # fmt: skip
        assert plan.action == "refresh"
        assert plan.cost < plan.saving
        done, last = done + 1, plan.at
    return done


def test_the_anthropic_prices_come_from_the_table_and_the_ttl_from_the_cache_setting() -> None:
    econ = sonnet()
    assert (econ.ttl_s, econ.write_mult, econ.read_mult) == (300.0, 1.25, 0.1)
    assert econ.input_usd == 3.0 / 1e6
    assert sonnet("1h").ttl_s == 3600.0 and sonnet("1h").write_mult == 2.0


def test_a_tool_wait_is_refreshed_once_per_ttl_just_before_each_expiry() -> None:
    on = LifecycleSettings(keep_warm=True, margin_s=15)
    econ = sonnet()
    assert refreshes_in(econ, on, 200) == 0  # shorter than the TTL: nothing to do
    assert refreshes_in(econ, on, 600) == 2  # at 285 s and 570 s
    first = next_action(
        econ, on, reason="tool_wait", wait_started=100, last_use=0, prefix_tokens=PREFIX, refreshes=0
    )
    assert first is not None and first.at == 285.0


def test_refreshes_stop_when_they_would_cost_as_much_as_the_re_write_ski_rental() -> None:
    econ = sonnet()
    on = LifecycleSettings(keep_warm=True, tool_wait_max_s=1e9)
    count = refreshes_in(econ, on, 1e6)
    assert count * econ.refresh_cost(PREFIX) < econ.rewrite_extra(PREFIX)
    assert (count + 1) * econ.refresh_cost(PREFIX) >= econ.rewrite_extra(PREFIX)
    assert count == 11  # 0.1x per refresh against the 1.15x a 5-minute re-write adds


def test_nothing_happens_when_off_for_a_short_prefix_for_a_local_server_or_past_the_window() -> None:
    econ = sonnet()
    assert refreshes_in(econ, LifecycleSettings(), 3600) == 0
    on = LifecycleSettings(keep_warm=True)
    assert (
        next_action(econ, on, reason="tool_wait", wait_started=0, last_use=0, prefix_tokens=500, refreshes=0)
        is None
    )
    local = economics_for("local", model="qwen", cache_ttl="5m", prices={})
    assert (
        next_action(
            local, on, reason="tool_wait", wait_started=0, last_use=0, prefix_tokens=PREFIX, refreshes=0
        )
        is None
    )
    short = LifecycleSettings(keep_warm=True, idle_window_s=60)
    assert refreshes_in(econ, short, 3600, reason="user_idle") == 0


def test_an_idle_session_is_compacted_at_the_last_deadline_keep_warm_cannot_cover() -> None:
    econ = sonnet()
    both = LifecycleSettings(keep_warm=True, compact_before_expiry=True, idle_window_s=1800)
    actions, last, done = [], 0.0, 0
    while (plan := next_action(econ, both, reason="user_idle", wait_started=0, last_use=last,
                               prefix_tokens=PREFIX, refreshes=done)) is not None:  # fmt: skip
        actions.append(plan.action)
        if plan.action == "compact":
            assert plan.cost < plan.saving
            break
        done, last = done + 1, plan.at
    assert actions == ["refresh"] * 5 + ["compact"]  # deadlines at 4:45 … 28:30; the next is past 30 min
    never_in_a_turn = next_action(
        econ, LifecycleSettings(compact_before_expiry=True), reason="tool_wait", wait_started=0, last_use=0,
        prefix_tokens=PREFIX, refreshes=0,
    )  # fmt: skip
    assert never_in_a_turn is None


def test_a_small_prompt_is_not_compacted() -> None:
    only = LifecycleSettings(compact_before_expiry=True, compact_min_tokens=20_000)
    plan = next_action(
        sonnet(), only, reason="user_idle", wait_started=0, last_use=0, prefix_tokens=5_000, refreshes=0
    )
    assert plan is None
