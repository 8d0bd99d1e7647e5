"""llama.cpp rules, hand-computed: one slot, and the RAM cache of N prompt states."""

from __future__ import annotations

from harness.cachemeter.sim import LlamaCppRamSimulator, LlamaCppSimulator
from tests.harness.cachemeter.sim.simkit import req, seq


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
