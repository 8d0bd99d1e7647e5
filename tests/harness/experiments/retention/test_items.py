"""How a facts file becomes sessions: `group_size` and `fact_groups`."""

from __future__ import annotations

import pytest

from harness.experiments.retention.facts import FactConversation, PlantedFact
from harness.experiments.retention.items import fact_groups, facts_budget, group_size
from harness.experiments.retention.script import RetentionReplay, ScriptLine


def _conv(name: str, words: int) -> FactConversation:
    text = " ".join([name] * words)
    return FactConversation(name, (("user", text), ("assistant", "ok")), (PlantedFact("f", ((name,),)),))


def _words(text: str) -> int:
    return len(text.split())


FILLER = RetentionReplay("filler", (ScriptLine("user", "Dana: a walk in the park.", ()),), (), "")


def test_all_conversations_in_one_session_when_they_fit() -> None:
    convs = [_conv(f"c{n}", 10) for n in range(6)]  # 6 × 11 words
    assert group_size(convs, count=_words, budget=100) == 6


def test_the_fewest_sessions_whose_facts_each_fit_in_the_budget() -> None:
    convs = [_conv(f"c{n}", 19) for n in range(12)]  # 12 × 20 words = 240
    # 2 sessions of 6 hold 120 each: over 100; 3 sessions of 4 hold 80 each
    size = group_size(convs, count=_words, budget=100)
    assert size == 4
    # what the eval does by default: the budget is a third of the window
    assert facts_budget(300) == 100
    sessions = fact_groups("f", convs, FILLER, group=None, count=_words, window=300)
    assert [len(s.items) for s in sessions] == [4, 4, 4]
    for s in sessions:
        facts = [line for line in s.lines if line.content != "Dana: a walk in the park."]
        assert sum(_words(line.content) for line in facts) <= 100
        assert s.lines[-1].content == "Dana: a walk in the park."  # the filler after the facts


def test_an_uneven_file_gets_groups_sized_by_its_largest_run() -> None:
    convs = [_conv("big", 79), _conv("b", 9), _conv("c", 9), _conv("d", 9)]  # 80, 10, 10, 10
    # one session: 110 > 100; two of 2: 90 and 20
    assert group_size(convs, count=_words, budget=100) == 2


def test_a_conversation_over_the_budget_is_a_session_alone() -> None:
    convs = [_conv("a", 200), _conv("b", 5)]
    assert group_size(convs, count=_words, budget=100) == 1


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive token budget"):
        group_size([_conv("a", 1)], count=_words, budget=0)
