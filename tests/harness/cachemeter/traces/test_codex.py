"""Codex rollouts: one request per model response, its prompt the history before that response,
its usage the reported column; bad lines skipped and named. The fixture is written by hand from
the format's public definition (no real session's content)."""

from __future__ import annotations

from pathlib import Path

from harness.cachemeter import ReportedUsage, read_requests
from harness.cachemeter.traces._read import detect_format

FIXTURE = Path(__file__).parent / "data" / "codex_rollout.jsonl"


def test_each_token_count_is_one_request_with_the_history_before_its_response() -> None:
    notes: list[str] = []
    assert detect_format(FIXTURE) == "codex"
    requests = list(read_requests(FIXTURE, notes=notes))
    # four responses; a rate-limit-only token_count and a repeated snapshot are not requests
    assert [r.line for r in requests] == [8, 12, 19, 23]
    first, second, third, fourth = requests
    assert first.system == "Run cargo fmt before committing."
    assert [m.role for m in first.messages] == ["user", "user"]  # its reasoning and call are its output
    assert [m.role for m in second.messages] == ["user", "user", "assistant", "assistant", "tool"]
    assert second.messages[3].tool_calls[0].name == "shell"
    assert second.messages[4].tool_call_id == "call_A1"
    assert len(third.messages) == 7 and len(fourth.messages) == 9
    assert fourth.messages[7].tool_calls[0].name == "apply_patch"
    assert {r.model for r in requests} == {"gpt-5.4"}
    assert {r.session_id for r in requests} == {"0199a1b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}
    # input_tokens includes the cached ones
    assert second.usage == ReportedUsage(input=304, cache_read=6_016, output=54)
    assert third.usage == ReportedUsage(input=6_530, cache_read=0, output=81)


def test_bad_lines_are_skipped_and_named_with_their_line_numbers() -> None:
    notes: list[str] = []
    assert len(list(read_requests(FIXTURE, notes=notes))) == 4
    assert any(":16: skipped: not valid JSON" in n for n in notes)
    assert any(":21: skipped: not a rollout line" in n for n in notes)
    assert any("carry no tool definitions" in n for n in notes)
