"""What the retention eval replays: LoCoMo conversations as transcript lines, sources by name."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.experiments.locomo import load_locomo
from harness.experiments.retention.script import load_replay, question_prompt, replay_locomo

SAMPLE = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 2 March, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"},
                {"speaker": "Ana", "dia_id": "D1:2", "text": "I adopted a cat."},
                {"speaker": "Ben", "dia_id": "D1:3", "text": "Lovely!", "blip_caption": "a grey cat"},
            ],
            "session_2_date_time": "9:00 am on 5 April, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "How is the cat?"}],
        },
        "qa": [
            {"question": "When did Ana adopt a cat?", "answer": 2023, "evidence": ["D1:2"], "category": 2},
            {
                "question": "What is Ben's dog called?",
                "evidence": ["D1:3; D2:1"],
                "category": 5,
                "adversarial_answer": "Rex",
            },
        ],
    }
]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SAMPLE), encoding="utf-8")
    return path


def test_a_locomo_conversation_replays_as_named_dated_alternating_messages(tiny: Path) -> None:
    replay = replay_locomo(load_locomo(tiny)[0])
    assert [line.role for line in replay.lines] == ["user", "assistant"]
    first, second = replay.lines
    assert first.content == "(Session 1 — 1:00 pm on 2 March, 2023)\nAna: Hi Ben!\nAna: I adopted a cat."
    assert first.dia_ids == ("D1:1", "D1:2")
    assert "Ben: Lovely! [shares a photo: a grey cat]" in second.content
    assert "(Session 2 — 9:00 am on 5 April, 2023)\nBen: How is the cat?" in second.content
    assert second.dia_ids == ("D1:3", "D2:1")
    assert "Ana" in replay.system_note and "Ben" in replay.system_note


def test_questions_keep_gold_category_and_every_evidence_id(tiny: Path) -> None:
    replay = replay_locomo(load_locomo(tiny)[0])
    dated, adversarial = replay.questions
    assert dated.gold == "2023"
    assert "session dates" in question_prompt(dated)
    assert adversarial.evidence == frozenset({"D1:3", "D2:1"})
    assert adversarial.gold == ""
    prompt = question_prompt(adversarial)
    assert "Not mentioned in the conversation" in prompt and "Rex" in prompt


def test_sources_resolve_to_files_ids_and_builtin_scenarios(tiny: Path) -> None:
    assert load_replay(str(tiny)).name == "locomo-tiny-1"
    assert load_replay("tiny-1", data=tiny).name == "locomo-tiny-1"
    synthetic = load_replay("synthetic-200")
    assert synthetic.lines[0].role == "user"
    assert all(q.category == 4 and q.gold for q in synthetic.questions)


def test_unknown_sources_and_conversations_get_errors_that_say_what_to_give(
    tiny: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="LoCoMo-format file"):
        load_replay("conv-99")
    with pytest.raises(ConfigError, match="tiny-1"):
        load_replay(str(tiny), conversation="conv-99")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"nope": 1}]', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a LoCoMo-format file"):
        load_replay(str(bad))


def test_the_dev_conversations_replay_with_questions(locomo_path: Path) -> None:
    replay = load_replay(str(locomo_path), conversation="conv-30")
    assert replay.name == "locomo-conv-30"
    assert len(replay.lines) > 100
    roles = [line.role for line in replay.lines]
    assert all(a != b for a, b in itertools.pairwise(roles))  # strictly alternating
    assert any(q.category == 5 for q in replay.questions)
