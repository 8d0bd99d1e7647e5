"""Trace files: format detection, and clear errors naming the line for anything that is not a request."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cachemeter import MeterInputError, read_requests
from harness.cachemeter.traces._read import detect_format
from tests.harness.cachemeter.traces.tracekit import write_lines


def test_a_garbage_line_is_reported_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"messages": []}\n\n{not json\n', encoding="utf-8")
    with pytest.raises(MeterInputError, match=r"bad\.jsonl:3: not valid JSON"):
        list(read_requests(path))


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ("[1, 2]", r":2: expected a JSON object, got list"),
        (
            '{"messages": [{"role": "wizard", "content": "x"}]}',
            r":2: not a chat request: .*'wizard' is not a chat role",
        ),
        ('{"model": "m"}', r":2: not a chat request: messages"),
        ('{"messages": [{"content": "x"}]}', r":2: not a chat request: messages\.0\.role"),
    ],
)
def test_bad_chat_lines_name_the_line_and_the_problem(tmp_path: Path, second: str, message: str) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "ok"}]}\n' + second + "\n", encoding="utf-8")
    with pytest.raises(MeterInputError, match=message):
        list(read_requests(path))


def test_a_first_line_of_neither_format_is_refused(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "x.jsonl", {"prompt": "hi"})
    with pytest.raises(MeterInputError, match=r"x\.jsonl:1: neither a keel trace record nor a chat request"):
        list(read_requests(path))


def test_a_missing_trace_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(MeterInputError, match="does not exist"):
        list(read_requests(tmp_path / "nope.jsonl"))


def test_an_empty_file_has_no_requests(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert detect_format(path) is None
    assert list(read_requests(path)) == []
