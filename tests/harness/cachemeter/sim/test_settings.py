"""Simulators by name: every one keeps a cache per model; names are parsed strictly."""

from __future__ import annotations

import pytest

from harness.cachemeter.sim import make_simulator, parse_sim_names
from tests.harness.cachemeter.sim.simkit import req, seq


@pytest.mark.parametrize("name", ["ideal", "vllm", "sglang", "llamacpp", "llamacpp-ram", "openai", "keel"])
def test_caches_are_per_model(name: str) -> None:
    sim = make_simulator(parse_sim_names(name)[0])
    sim.feed(req(seq(3000), model="a"))
    assert sim.feed(req(seq(3000), model="b")).reusable == 0
    assert sim.feed(req(seq(3000), model="a")).reusable > 0


def test_parse_sim_names_rejects_an_unknown_name_and_lists_the_valid_ones() -> None:
    assert parse_sim_names("vllm, ideal,vllm") == ("vllm", "ideal")
    assert len(parse_sim_names("all")) == 8
    with pytest.raises(ValueError, match=r"unknown simulator 'vlm'.*vllm"):
        parse_sim_names("vlm")
