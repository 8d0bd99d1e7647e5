"""harness.testing: the doubles users test their agents with."""

from __future__ import annotations

from harness.testing import FakeTokenizer
from harness.tokens import Tokenizer


def test_fake_tokenizer_counts_words_with_stable_ids() -> None:
    tokenizer: Tokenizer = FakeTokenizer()
    assert tokenizer.name == "fake"
    assert tokenizer.count("a  b\nc") == 3
    assert tokenizer.encode("tea tea") == tokenizer.encode("tea  tea")
    ids = tokenizer.encode("tea coffee")
    assert ids[0] != ids[1]
    assert FakeTokenizer().encode("tea coffee") == ids
