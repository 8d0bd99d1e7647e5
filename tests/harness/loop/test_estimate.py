"""PromptEstimator: incremental counts equal counts from scratch, at a cost per appended message."""

from __future__ import annotations

from dataclasses import replace

from harness.loop.estimate import PromptEstimator
from harness.tokens import CharTokenizer, TokenCounter
from harness.types import Message, ModelRequest, ToolSpec, Usage

TOOLS = (ToolSpec(name="memory", description="Save a note.", parameters={"type": "object"}),)


class _CountingTokenizer(CharTokenizer):
    """chars/4, remembering how many texts it was asked to count."""

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return super().count(text)


def _messages(n: int) -> list[Message]:
    return [
        Message("user" if i % 2 == 0 else "assistant", f"message number {i} " * (i % 7 + 1)) for i in range(n)
    ]


def test_an_incremental_count_equals_the_count_from_scratch_as_the_transcript_grows() -> None:
    est = PromptEstimator(TokenCounter(CharTokenizer()))
    fresh = TokenCounter(CharTokenizer())
    msgs: list[Message] = []
    for m in _messages(60):
        msgs.append(m)
        assert est.full("system", msgs, TOOLS, version=0) == fresh.count_prompt("system", msgs, TOOLS)


def test_each_message_is_tokenized_once_per_version_however_often_the_prompt_is_counted() -> None:
    tok = _CountingTokenizer()
    # a counter with no memo of its own beyond one entry, so only the estimator's sums can spare the work
    est = PromptEstimator(TokenCounter(tok, max_entries=1))
    msgs: list[Message] = []
    for m in _messages(200):
        msgs.append(m)
        est.full("system", msgs, TOOLS, version=3)
    texts_per_prompt_overhead = 2  # the system text and the tool list, memoized after the first count
    assert tok.calls == 200 + texts_per_prompt_overhead


def test_a_rewrite_is_counted_afresh() -> None:
    est = PromptEstimator(TokenCounter(CharTokenizer()))
    fresh = TokenCounter(CharTokenizer())
    long = _messages(40)
    est.full("s", long, (), version=0)
    rewritten = [Message("user", "a summary of the middle"), *long[-4:]]
    assert est.full("s", rewritten, (), version=1) == fresh.count_prompt("s", rewritten, ())


def test_a_sequence_that_does_not_extend_the_counted_one_is_not_served_from_its_sums() -> None:
    est = PromptEstimator(TokenCounter(CharTokenizer()))
    fresh = TokenCounter(CharTokenizer())
    est.full("s", _messages(30), (), version=5)
    other = [Message("user", "something else entirely, and much longer than the rest " * 20)] * 3
    # same version number, different messages (a caller's own list): still counted right
    assert est.full("s", other, (), version=5) == fresh.count_prompt("s", other, ())


def test_a_prefix_of_the_counted_transcript_reads_its_partial_sum() -> None:
    est = PromptEstimator(TokenCounter(CharTokenizer()))
    fresh = TokenCounter(CharTokenizer())
    msgs = _messages(50)
    est.full("s", msgs, (), version=0)
    assert est.full("s", msgs[:20], (), version=0) == fresh.count_prompt("s", msgs[:20], ())


def test_observe_learns_the_token_ratio_from_the_incremental_count() -> None:
    est = PromptEstimator(TokenCounter(CharTokenizer()))
    msgs = tuple(_messages(10))
    ours = TokenCounter(CharTokenizer()).count_prompt("sys", msgs, TOOLS)
    request = ModelRequest(tools=TOOLS, system="sys", messages=msgs)
    est.observe(request, Usage(input=2 * ours, output=1), version=0)
    assert est.token_scale == 2.0


def test_messages_given_their_store_ids_later_are_not_counted_again() -> None:
    tok = _CountingTokenizer()
    est = PromptEstimator(TokenCounter(tok, max_entries=1))
    msgs = _messages(100)
    est.full("system", msgs, TOOLS, version=0)
    before = tok.calls
    # a turn's rows are written at its end: the transcript swaps them for copies with store ids
    msgs[-3:] = [replace(m, store_id=i) for i, m in enumerate(msgs[-3:], 1)]
    msgs.append(Message("user", "the next question"))
    est.full("system", msgs, TOOLS, version=0)
    assert tok.calls - before == 1  # only the new message
