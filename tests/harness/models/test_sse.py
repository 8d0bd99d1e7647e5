"""The SSE line decoder and the text splitter shared by the streaming code."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.models._stream import SSEDecoder, SSEEvent, split_text


def decode(lines: list[str]) -> tuple[list[SSEEvent], SSEDecoder]:
    decoder = SSEDecoder()
    events = [e for e in (decoder.feed(line) for line in lines) if e is not None]
    last = decoder.close()
    if last is not None:
        events.append(last)
    return events, decoder


def test_events_are_dispatched_on_blank_lines_with_their_names() -> None:
    events, decoder = decode(["event: message_start", 'data: {"a":1}', "", "data: [DONE]", ""])
    assert events == [SSEEvent("message_start", '{"a":1}'), SSEEvent("message", "[DONE]")]
    assert decoder.stray is None


def test_multi_line_data_is_joined_and_comments_and_ids_are_ignored() -> None:
    events, _ = decode([": keep-alive", "id: 7", "retry: 100", "data: line one", "data:line two", ""])
    assert events == [SSEEvent("message", "line one\nline two")]


def test_an_event_name_without_data_dispatches_nothing_and_does_not_leak() -> None:
    events, _ = decode(["event: ping", "", "data: x", ""])
    assert events == [SSEEvent("message", "x")]


def test_a_final_event_without_its_blank_line_is_still_dispatched() -> None:
    events, _ = decode(["data: [DONE]"])
    assert events == [SSEEvent("message", "[DONE]")]


def test_lines_that_are_not_sse_are_remembered_for_the_error_message() -> None:
    events, decoder = decode(["<html>", "<body>502 Bad Gateway</body>", ""])
    assert events == []
    assert decoder.stray == "<html>"


@given(st.text(alphabet=st.sampled_from("ab ,.\n"), max_size=200), st.integers(min_value=1, max_value=6))
def test_split_text_rejoins_exactly_into_at_most_n_non_empty_pieces(text: str, pieces: int) -> None:
    chunks = split_text(text, pieces)
    assert "".join(chunks) == text
    assert len(chunks) <= pieces
    assert all(chunks)
