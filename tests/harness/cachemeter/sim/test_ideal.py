"""The `ideal` simulator: the longest prefix shared with any earlier request."""

from __future__ import annotations

from harness.cachemeter.sim import IdealSimulator
from tests.harness.cachemeter.sim.simkit import req, seq


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
