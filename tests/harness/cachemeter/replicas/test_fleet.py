"""Fleets of servers behind a router, on a synthetic trace of many interleaved conversations.

The trace: 400 conversations of two requests each (a question, then a follow-up that extends
it), shuffled together, no token shared between conversations. On one server the follow-up
reuses its whole first request. Round-robin sends request k to server k mod N, so a follow-up
finds its first request only when the two are a multiple of N apart: about 1/N of them. The
tolerance below is four standard deviations of that share, computed from the trace's own
weights, not tuned.
"""

from __future__ import annotations

import math
import random

import pytest

from harness.cachemeter import SimRequest
from harness.cachemeter._seq import pack
from harness.cachemeter.replicas import RoutingPolicy
from harness.cachemeter.replicas._fleet import FleetSimulator
from harness.cachemeter.sim import SglangSimulator

SESSIONS = 400


def _trace(seed: int = 3) -> tuple[list[SimRequest], dict[str, int]]:
    """The requests, and each conversation's first-request length."""
    rng = random.Random(seed)
    order = [s for s in range(SESSIONS) for _ in range(2)]
    rng.shuffle(order)
    first = {f"s{s}": rng.randint(200, 600) for s in range(SESSIONS)}
    seen: set[str] = set()
    out = []
    for i, s in enumerate(order):
        key = f"s{s}"
        base = list(range(s * 1000, s * 1000 + first[key]))
        tokens = (
            base
            if key not in seen
            else base + list(range(s * 1000 + 700, s * 1000 + 700 + rng.randint(20, 100)))
        )
        seen.add(key)
        out.append(SimRequest(tokens=pack(tokens), session=key, timestamp=float(i)))
    return out, first


def _gaps(trace: list[SimRequest]) -> dict[str, int]:
    """Index distance between each conversation's two requests."""
    at: dict[str, int] = {}
    gaps: dict[str, int] = {}
    for i, r in enumerate(trace):
        assert r.session is not None
        if r.session in at:
            gaps[r.session] = i - at[r.session]
        else:
            at[r.session] = i
    return gaps


def _reuse(sim: SglangSimulator | FleetSimulator, trace: list[SimRequest]) -> list[int]:
    return [sim.feed(r).reusable for r in trace]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_round_robin_reuses_about_one_nth_of_what_one_server_does(n: int) -> None:
    trace, first = _trace()
    single = sum(_reuse(SglangSimulator(), trace))
    assert single == sum(first.values())  # every follow-up reuses its whole first request
    fleet = FleetSimulator("sglang", n, "round_robin")
    rr = sum(_reuse(fleet, trace))
    gaps = _gaps(trace)
    # exact: a follow-up is warm when its first request went to the same server, k ≡ j (mod n)
    assert rr == sum(first[s] for s, g in gaps.items() if g % n == 0)
    # and that is about 1/n of the single server's reuse
    p = 1 / n
    weights = list(first.values())
    sigma = math.sqrt(p * (1 - p) * sum(w * w for w in weights)) / sum(weights)
    assert abs(rr / single - p) <= 4 * sigma
    assert abs(fleet.warm_landed / fleet.warm_possible - p) <= 4 * math.sqrt(
        p * (1 - p) / fleet.warm_possible
    )


@pytest.mark.parametrize("policy", ["session", "prefix"])
def test_session_affinity_and_prefix_routing_equal_one_server(policy: RoutingPolicy) -> None:
    trace, _ = _trace()
    single = _reuse(SglangSimulator(), trace)
    fleet = FleetSimulator("sglang", 4, policy)
    assert _reuse(fleet, trace) == single
    assert fleet.warm_landed == fleet.warm_possible


@pytest.mark.parametrize("policy", ["round_robin", "session", "prefix"])
def test_one_server_is_one_server_whatever_the_policy(policy: RoutingPolicy) -> None:
    trace, _ = _trace()
    assert _reuse(FleetSimulator("sglang", 1, policy), trace) == _reuse(SglangSimulator(), trace)


def test_a_follow_up_sent_away_from_its_first_request_is_routed_away() -> None:
    trace, first = _trace()
    fleet = FleetSimulator("sglang", 4, "round_robin")
    gaps = _gaps(trace)
    at: dict[str, int] = {}
    for r in trace:
        step = fleet.feed(r)
        assert r.session is not None
        if r.session not in at:
            at[r.session] = 1
            assert step.loss is None  # nothing anywhere to reuse
            continue
        if gaps[r.session] % 4 == 0:
            assert (step.reusable, step.loss) == (first[r.session], None)
        else:
            assert (step.reusable, step.loss, step.potential) == (0, "routed_away", first[r.session])


def test_vllm_fleets_round_their_routed_away_loss_to_blocks() -> None:
    fleet = FleetSimulator("vllm", 2, "round_robin")
    fleet.feed(SimRequest(tokens=pack(list(range(100))), session="a"))
    step = fleet.feed(SimRequest(tokens=pack(list(range(120))), session="a"))  # lands on server 1
    assert (step.reusable, step.loss, step.potential) == (0, "routed_away", 96)


def test_a_fleet_runs_server_simulators_only() -> None:
    with pytest.raises(ValueError, match="a fleet runs one of"):
        FleetSimulator("openai", 2, "session")
