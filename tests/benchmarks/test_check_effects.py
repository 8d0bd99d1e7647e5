"""The per-check effects of a retention run, read from its JSON (no model)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.experiments.retention.facts import FactConversation, MustNot, PlantedFact

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.check_effects import effects, rejudge, sentences

CONV = FactConversation(
    "bakery",
    (("user", "I do not use Excel, I can't stand it. Everything I have is in LibreOffice Calc."),),
    (PlantedFact("calc", (("calc",),)),),
    (MustNot("excel", (("excel",),), ("not", "n't")),),
)


def test_each_check_is_credited_with_the_wrong_memories_it_stopped_and_the_facts_it_cost() -> None:
    state: dict[str, object] = {
        "arms": [
            {
                "arm": "off",
                "snapshots": [{"refused": ["Roisin uses Excel — the opposite of what the user said (…)"]}],
            },
            {
                "arm": "memory_only_chunked",
                "snapshots": [
                    {
                        "refused": [
                            "Roisin uses Excel — the opposite of what the user said (denied: 'I do not use Excel')",
                            "Roisin keeps everything in Calc — corrected: the user took it back ('…')",
                        ],
                        "saved": [
                            "user: Roisin works in LibreOffice Calc",
                            "user: Roisin likes Excel sheets",
                        ],
                    }
                ],
            },
        ]
    }
    lines = effects(state, (CONV,))
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-2]}
    assert rows["opposite"] == ["1", "0", "1"]  # refused once (off is not counted), a wrong memory stopped
    assert rows["corrected"] == ["1", "1", "0"]  # a planted fact lost
    assert lines[-2] == "saved 2 entries: 1 hold a planted fact, 1 wrong memories"
    assert lines[-1] == "checks_refused 2 facts_lost 1 wrong_stopped 1 saved_wrong 1"


def test_without_a_run_the_checks_are_asked_about_the_files_own_sentences_and_traps() -> None:
    lines = sentences((CONV,))
    # the user's message holding the planted fact passes; "The user uses excel" is refused
    assert lines == ["sentences_refused 0 of 1 traps_stopped 1 of 1"]


def test_rejudging_a_run_counts_what_todays_checks_would_keep() -> None:
    state: dict[str, object] = {
        "arms": [
            {
                "arm": "memory_only_chunked",
                "snapshots": [
                    {
                        "refused": [],
                        "saved": ["user: Roisin uses Excel", "user: Roisin works in LibreOffice Calc"],
                    }
                ],
            }
        ]
    }
    # "uses Excel" is what the user denied: today's checks refuse it; the Calc fact stays
    assert rejudge(state, (CONV,)) == ["rejudged_kept 1 facts_kept 1 wrong_kept 0"]
