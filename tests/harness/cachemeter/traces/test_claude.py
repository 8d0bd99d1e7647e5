"""Claude Code transcripts: one request per API response, its prompt the parentUuid chain, its
usage the reported column; bad lines skipped and named. The fixture is written by hand from
the public descriptions of the format (no real session's content)."""

from __future__ import annotations

from pathlib import Path

from harness.cachemeter import CanonicalRenderer, ReportedUsage, measure, read_requests
from harness.cachemeter.traces._read import detect_format
from harness.tokens import CharTokenizer

FIXTURE = Path(__file__).parent / "data" / "claude_code_session.jsonl"


def test_each_api_response_is_one_request_with_the_conversation_before_it() -> None:
    notes: list[str] = []
    assert detect_format(FIXTURE) == "claude-code"
    first, second, third = read_requests(FIXTURE, notes=notes)
    # the first response was written as two lines (text, then tool_use) with one message id
    assert [m.role for m in first.messages] == ["user"]
    assert [m.role for m in second.messages] == ["user", "assistant", "user"]
    merged = second.messages[1]
    assert merged.content == "I'll read the tokenizer first."
    assert [c.name for c in merged.tool_calls] == ["Read"]
    assert "tool_result" in second.messages[2].content
    assert len(third.messages) == 5
    assert (first.model, first.session_id) == (
        "claude-sonnet-4-5-20250929",
        "7d1f0c4e-5b2a-4c88-9e10-2f6b8a1d3c55",
    )
    assert third.timestamp is not None and second.timestamp is not None
    assert third.timestamp - second.timestamp == 451.0  # the user came back after 7.5 minutes
    assert first.usage == ReportedUsage(input=4, cache_read=0, cache_write=14_210, output=61)
    assert third.usage == ReportedUsage(input=5, cache_read=0, cache_write=14_395, output=52)
    assert first.system == "" and first.tools == ()  # the format does not carry them


def test_bad_lines_are_skipped_and_named_with_their_line_numbers() -> None:
    notes: list[str] = []
    requests = list(read_requests(FIXTURE, notes=notes))
    assert len(requests) == 3  # the synthetic API-error line is not a request
    assert any(":9: skipped: not valid JSON" in n for n in notes)
    assert any(":12: skipped: expected a JSON object, got list" in n for n in notes)
    assert any("1 synthetic assistant line(s)" in n for n in notes)
    assert any("carry neither the system prompt nor the tool definitions" in n for n in notes)


def test_the_report_puts_the_reported_usage_beside_the_simulation_and_keeps_the_notes() -> None:
    notes: list[str] = []
    requests = list(read_requests(FIXTURE, notes=notes))
    report = measure(requests, CanonicalRenderer(CharTokenizer()), simulators=("anthropic",), notices=notes)
    assert report.reported is not None
    assert (report.reported.requests, report.reported.cache_read) == (3, 14_210)
    assert report.reported.cache_write == 14_210 + 140 + 14_395
    assert report.notices[: len(notes)] == tuple(notes)
    # the 451 s idle gap is past Anthropic's 5 minutes: the simulation loses it too
    assert report.requests[2].gap is not None and report.requests[2].gap > 300
    assert report.requests[2].sims["anthropic"].reason.kind == "ttl_expired"


def test_a_transcript_of_only_bad_lines_reads_as_no_requests(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"type":"summary","summary":"x","leafUuid":"u"}\n{"type":"user","sessionId":"s"}\n', encoding="utf-8"
    )
    notes: list[str] = []
    assert list(read_requests(path, notes=notes)) == []
    assert any(":2: skipped: a user line without a uuid and a message object" in n for n in notes)
