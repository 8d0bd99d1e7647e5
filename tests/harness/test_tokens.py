"""Token counting: the shared tokenizer remembers long texts' counts, bounded, never stale."""

from __future__ import annotations

import pytest

import harness.tokens as tokens
from harness.tokens import TiktokenTokenizer, load_tiktoken


class _Encoding:
    """Stands in for tiktoken.Encoding: one token per word, and counts every call."""

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, text: str, *, disallowed_special: object = ()) -> list[int]:
        self.calls += 1
        return [len(w) for w in text.split()]


def test_a_long_text_is_encoded_once_and_a_changed_one_is_counted_afresh() -> None:
    enc = _Encoding()
    tok = TiktokenTokenizer(enc)
    long = "word " * 200
    assert tok.count(long) == 200
    assert tok.count(long) == 200
    assert enc.calls == 1
    assert tok.count(long + "more") == 201  # another text: its own count, not the remembered one
    assert enc.calls == 2
    short = "a few words"
    assert tok.count(short) == tok.count(short) == 3
    assert enc.calls == 4  # short texts are not remembered (the lookup would cost what encoding does)


def test_the_remembered_texts_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_MEMO_MAX_CHARS", 3000)
    enc = _Encoding()
    tok = TiktokenTokenizer(enc)
    texts = [f"text{i} " * 150 for i in range(10)]  # about 1,000 characters each
    for text in texts:
        tok.count(text)
    assert tok._counted_chars <= 3000
    before = enc.calls
    assert tok.count(texts[-1]) == 150  # the newest is still remembered
    assert enc.calls == before
    assert tok.count(texts[0]) == 150  # the oldest was forgotten and is encoded again
    assert enc.calls == before + 1


async def test_every_session_of_a_process_shares_one_tiktoken_tokenizer() -> None:
    first, second = await load_tiktoken(), await load_tiktoken()
    assert first is second
    text = "The ingest job quarantines the malformed row and keeps the batch going. " * 20
    assert first.count(text) == len(first.encode(text))
