"""The `keel` simulator runs keel's server's own prefix policy: side calls cost the conversation
nothing, a restarted server resumes from the disk prefix, and scopes never share."""

from __future__ import annotations

from harness.cachemeter._seq import pack
from harness.cachemeter.sim import KeelLocalSimulator
from harness.models.local import PrefixPolicy
from tests.harness.cachemeter.sim.simkit import req, seq

SYSTEM = seq(400)  # the system turn and tools
TURN1 = [*SYSTEM, *seq(30, 1000)]
REPLY1 = seq(5, 2000)
TURN2 = [*TURN1, *REPLY1, *seq(20, 3000)]
SIDE = seq(200, 5000)


def test_a_side_call_between_turns_leaves_the_second_turn_its_whole_prefix() -> None:
    sim = KeelLocalSimulator()
    assert sim.feed(req(TURN1, stable=400, generated=pack(REPLY1))).reusable == 0
    assert sim.feed(req(SIDE)).reusable == 0
    assert sim.feed(req(TURN2, stable=400)).reusable == len(TURN1) + len(REPLY1)


def test_with_no_ram_states_the_side_call_costs_the_conversation_as_one_slot_would() -> None:
    sim = KeelLocalSimulator(policy=PrefixPolicy(ram_states=0), disk=False)
    sim.feed(req(TURN1, stable=400, generated=pack(REPLY1)))
    sim.feed(req(SIDE))
    assert sim.feed(req(TURN2, stable=400)).reusable == 0


def test_a_restarted_server_resumes_from_the_stable_prefix_on_disk() -> None:
    sim = KeelLocalSimulator()
    sim.feed(req(TURN1, stable=400, generated=pack(REPLY1)))
    sim.restart()
    other = [*SYSTEM, *seq(25, 7000)]
    assert sim.feed(req(other, stable=400)).reusable == 400
    assert KeelLocalSimulator(disk=False).feed(req(other, stable=400)).reusable == 0


def test_a_scope_never_resumes_from_another_scopes_state() -> None:
    sim = KeelLocalSimulator()
    sim.feed(req(TURN1, stable=400, scope="alice"))
    assert sim.feed(req(TURN1, stable=400, scope="bob")).reusable == 0
    assert sim.feed(req(TURN1, stable=400, scope="alice")).reusable == len(TURN1) - 1
