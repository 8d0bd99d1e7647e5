"""The prefix cache's policy, and the engine routing requests with it over a character model:
a side call never costs the conversation its prefix, and no scope resumes from another's."""

from __future__ import annotations

import threading

from pydantic import JsonValue

from harness.models.local._engine import Engine, Generation
from harness.models.local._prefix import Plan, PrefixPolicy, RamStates, Saved, plan_resume
from tests.harness.models.local.test_engine import _engine

SYSTEM = "You are a careful assistant who keeps notes. " * 4


def _turns(*texts: str, system: str = SYSTEM) -> list[JsonValue]:
    out: list[JsonValue] = [{"role": "system", "content": system}]
    for i, t in enumerate(texts):
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": t})
    return out


def _run(engine: Engine, messages: list[JsonValue], *, user: str | None = None) -> Generation:
    body: dict[str, JsonValue] = {"messages": messages}
    if user is not None:
        body["user"] = user
    return engine.generate(engine.prepare(body), lambda _: None, threading.Event())


def _conversation(engine: Engine, *, side: bool) -> Generation:
    _run(engine, _turns("I'm Sam and I use vim every day."))
    if side:
        _run(engine, _turns("Summarize: a long unrelated transcript about boats.", system="Summarize."))
    return _run(engine, _turns("I'm Sam and I use vim every day.", "ok", "And my cat is Miso."))


def test_a_side_call_between_two_turns_leaves_the_second_turn_its_whole_prefix() -> None:
    alone, _, _ = _engine("ok")
    control = _conversation(alone, side=False)
    engine, _, _ = _engine("ok")
    second = _conversation(engine, side=True)
    assert control.cached_tokens > len(SYSTEM)
    assert second.cached_tokens == control.cached_tokens
    assert len(engine.ram.entries) >= 1


def test_with_no_ram_states_a_side_call_evicts_the_conversation_as_before() -> None:
    engine, _, _ = _engine("ok", policy=PrefixPolicy(ram_states=0))
    second = _conversation(engine, side=True)
    assert second.cached_tokens < len(SYSTEM)


def test_a_request_never_resumes_from_another_scopes_prefix() -> None:
    engine, _, llm = _engine("ok")
    messages = _turns("My diagnosis is private.")
    first = _run(engine, messages, user="alice")
    probe = _run(engine, messages, user="bob")
    assert first.cached_tokens == 0
    assert probe.cached_tokens == 0, "bob's count (and time) must not reveal alice's prompt"
    before = llm.evaluated
    again = _run(engine, messages, user="alice")
    assert again.cached_tokens == len(engine.prepare({"messages": messages}).tokens) - 1
    assert llm.evaluated - before == 1, "alice's own state was kept and reused"


def test_saving_a_state_drops_the_states_it_extends_and_evicts_the_least_recently_used() -> None:
    ram: RamStates[bytes] = RamStates(PrefixPolicy(ram_states=2))
    ram.add(Saved((1, 2, 3), "", 10, b"a"))
    ram.add(Saved((1, 2, 3, 4, 5), "", 10, b"b"))
    assert [e.payload for e in ram.entries] == [b"b"], "(1, 2, 3) can never beat (1, 2, 3, 4, 5)"
    ram.add(Saved((7, 8), "", 10, b"c"))
    ram.touch(ram.entries[0])
    ram.add(Saved((9,), "", 10, b"d"))
    assert sorted(e.payload for e in ram.entries) == [b"b", b"d"]


def test_the_byte_bound_holds_whatever_the_count() -> None:
    ram: RamStates[bytes] = RamStates(PrefixPolicy(ram_states=8, ram_bytes=25))
    for i in range(4):
        ram.add(Saved((i,), "", 10, bytes([i])))
    assert sum(e.nbytes for e in ram.entries) <= 25 and len(ram.entries) == 2


def test_the_plan_keeps_the_live_state_when_a_request_only_extends_it() -> None:
    ram: RamStates[bytes] = RamStates(PrefixPolicy())
    chosen: Plan[bytes, bytes] = plan_resume(
        PrefixPolicy(),
        live=list(range(100)),
        live_scope="",
        tokens=list(range(120)),
        scope="",
        ram=ram,
        disk=(None, 0),
    )
    assert chosen.source == "live" and chosen.shared == 100 and not chosen.save_live
    side: Plan[bytes, bytes] = plan_resume(
        PrefixPolicy(),
        live=list(range(100)),
        live_scope="",
        tokens=[500, 501],
        scope="",
        ram=ram,
        disk=(None, 0),
    )
    assert side.source == "live" and side.save_live, "the conversation is saved before the side call"
