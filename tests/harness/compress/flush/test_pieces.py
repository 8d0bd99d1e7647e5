"""The chunked flush's pieces: whole turns, in order, within the budget."""

from __future__ import annotations

import pytest

from harness.compress.flush import flush_pieces
from harness.types import Message, ToolCall


def _size(m: Message) -> int:
    return len(m.content.split())


def _msgs(*spec: tuple[str, int]) -> list[Message]:
    return [Message(role=role, content=" ".join(["w"] * n)) for role, n in spec]  # type: ignore[arg-type]


def test_pieces_are_whole_turns_in_order_within_the_budget() -> None:
    msgs = _msgs(
        ("user", 10), ("assistant", 20), ("user", 10), ("assistant", 20), ("user", 5), ("assistant", 5)
    )
    pieces = flush_pieces(msgs, count=_size, budget=40)
    assert [len(p) for p in pieces] == [2, 4]
    assert [m for p in pieces for m in p] == msgs
    assert all(p[0].role == "user" for p in pieces)
    assert all(sum(_size(m) for m in p) <= 40 for p in pieces)


def test_a_turn_over_the_budget_is_a_piece_of_its_own_and_never_split() -> None:
    call = ToolCall(id="c1", name="search", arguments="{}")
    msgs = [
        Message(role="user", content="w " * 5),
        Message(role="assistant", content="", tool_calls=(call,)),
        Message(role="tool", content="w " * 100, tool_call_id="c1"),
        Message(role="assistant", content="w"),
        Message(role="user", content="w " * 5),
    ]
    pieces = flush_pieces(msgs, count=_size, budget=20)
    assert [len(p) for p in pieces] == [4, 1]  # the tool call stays with its result


def test_a_transcript_that_starts_mid_turn_keeps_its_first_messages() -> None:
    msgs = _msgs(("assistant", 3), ("user", 3), ("assistant", 3))
    pieces = flush_pieces(msgs, count=_size, budget=4)
    assert [[m.role for m in p] for p in pieces] == [["assistant"], ["user", "assistant"]]


def test_no_messages_no_pieces_and_a_bad_budget_is_refused() -> None:
    assert flush_pieces([], count=_size, budget=10) == []
    with pytest.raises(ValueError, match="positive token budget"):
        flush_pieces(_msgs(("user", 1)), count=_size, budget=0)
