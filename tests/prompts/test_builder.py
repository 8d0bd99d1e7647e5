"""System-prompt assembly: slot order is data, the slot map points at each slot's text."""

from __future__ import annotations

import pytest

from prompts.builder import SEPARATOR, build_system_prompt
from prompts.slots import DEFAULT_SLOT_ORDER, SlotId


def _texts() -> dict[SlotId, str]:
    return {
        "identity": "I am keel.",
        "tool_guidance": "Use memory wisely.",
        "memory": "MEMORY block",
        "user": "USER block",
        "session": "Conversation started: Sunday, November 22, 2026",
    }


def test_slots_are_joined_in_order_and_empty_slots_leave_no_trace() -> None:
    prompt = build_system_prompt(_texts())
    assert prompt.text == SEPARATOR.join(
        [
            "I am keel.",
            "Use memory wisely.",
            "MEMORY block",
            "USER block",
            "Conversation started: Sunday, November 22, 2026",
        ]
    )
    assert [s.name for s in prompt.slots] == list(DEFAULT_SLOT_ORDER)


def test_slot_map_offsets_point_at_each_slots_text() -> None:
    texts = _texts()
    prompt = build_system_prompt(texts)
    for name, text in texts.items():
        assert prompt.slot_text(name) == text
    assert prompt.slot_text("skills") == ""


def test_token_offsets_are_counted_on_the_final_text() -> None:
    prompt = build_system_prompt(_texts(), count_tokens=len)
    span = prompt.span("memory")
    assert span is not None
    assert (span.token_start, span.token_end) == (span.start, span.end)


def test_order_is_data_memory_last_moves_memory_to_the_end() -> None:
    order: list[SlotId] = [s for s in DEFAULT_SLOT_ORDER if s not in ("memory", "user")] + ["memory", "user"]
    prompt = build_system_prompt(_texts(), order=order)
    assert prompt.text.endswith("MEMORY block" + SEPARATOR + "USER block")
    assert prompt.slot_at(prompt.text.index("USER block")) == "user"


def test_changing_only_memory_changes_bytes_only_from_the_memory_slot_on() -> None:
    a = build_system_prompt(_texts())
    changed = _texts()
    changed["memory"] = "MEMORY block, longer now"
    b = build_system_prompt(changed)
    first_diff = next(i for i, (x, y) in enumerate(zip(a.text, b.text, strict=False)) if x != y)
    assert a.slot_at(first_diff) == "memory"


def test_unknown_or_repeated_slots_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown prompt slot"):
        build_system_prompt({}, order=["identity", "nonsense"])  # type: ignore[list-item]  # deliberately bad
    with pytest.raises(ValueError, match="twice"):
        build_system_prompt({}, order=["identity", "identity"])


def test_each_distinct_prefix_is_counted_once_and_offsets_stay_exact() -> None:
    texts = _texts()
    texts["skills"] = ""  # an empty slot shares its offsets with its neighbour
    asked: list[str] = []

    def count(text: str) -> int:
        asked.append(text)
        return len(text.split())

    prompt = build_system_prompt(texts, count_tokens=count)
    assert len(asked) == len(set(asked))
    for span in prompt.slots:
        assert span.token_start == len(prompt.text[: span.start].split())
        assert span.token_end == len(prompt.text[: span.end].split())
