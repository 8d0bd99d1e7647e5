"""SharedReplies: one generation per identical temperature-0 request, streamed or not."""

from __future__ import annotations

from harness.experiments.retention.shared_replies import SharedReplies
from harness.models.base import ModelTextDelta, ReplyDone
from harness.testing import ScriptedModel, say
from harness.types import Message, ModelRequest


def _request(text: str, temperature: float | None) -> ModelRequest:
    return ModelRequest(system="s", messages=(Message(role="user", content=text),), temperature=temperature)


async def test_a_repeated_temperature_zero_request_is_answered_from_the_first_reply() -> None:
    inner = ScriptedModel([say("first"), say("second"), say("third")])
    shared = SharedReplies(inner)
    one = await shared.complete(_request("q", 0.0))
    async with shared.stream(_request("q", 0.0)) as events:
        seen = [ev async for ev in events]
    assert one.message.content == "first"
    assert [type(ev) for ev in seen] == [ModelTextDelta, ReplyDone]
    assert isinstance(seen[-1], ReplyDone) and seen[-1].reply.message.content == "first"
    assert len(inner.requests) == 1
    assert shared.shared == 1 and shared.latencies[0] is None and shared.latencies[1] is not None
    # A different request reaches the model.
    assert (await shared.complete(_request("other", 0.0))).message.content == "second"


async def test_a_sampled_request_always_reaches_the_model() -> None:
    inner = ScriptedModel([say("a"), say("b")])
    shared = SharedReplies(inner)
    replies = [(await shared.complete(_request("q", None))).message.content for _ in range(2)]
    assert replies == ["a", "b"] and shared.latencies == [None, None]
