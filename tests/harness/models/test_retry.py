"""RetryingClient: what is retried, how long it waits, and that streams are never replayed."""

from __future__ import annotations

import json

import httpx
import pytest

from harness import errors
from harness.models import ModelTextDelta, OpenAIClient, ReplyDone, RetryAttempt, RetryingClient
from harness.models.base import ModelEvent
from harness.models.scripted import ScriptedModel
from harness.types import Message, ModelRequest

REQUEST = ModelRequest(system="s", messages=(Message(role="user", content="hi"),))


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def retrying(inner: ScriptedModel | OpenAIClient, sleeps: Sleeps, **kwargs: float) -> RetryingClient:
    return RetryingClient(
        inner,
        max_attempts=int(kwargs.get("max_attempts", 4)),
        base_delay_s=kwargs.get("base_delay_s", 1.0),
        max_delay_s=kwargs.get("max_delay_s", 3.0),
        max_retry_after_s=kwargs.get("max_retry_after_s", 60.0),
        sleep=sleeps,
        random=lambda: kwargs.get("jitter", 1.0),
    )


@pytest.mark.parametrize(
    "error",
    [
        errors.ModelConnectionError("down"),
        errors.ModelTimeoutError("slow"),
        errors.ModelRateLimitError("429"),
        errors.ModelServerError("503", status=503),
    ],
)
async def test_retryable_errors_are_retried_until_success(error: errors.ModelError) -> None:
    sleeps = Sleeps()
    model = ScriptedModel([error, error, "fine"])
    reply = await retrying(model, sleeps).complete(REQUEST)
    assert reply.message.content == "fine"
    assert len(model.requests) == 3
    model.assert_complete()


@pytest.mark.parametrize(
    "error",
    [
        errors.ModelAuthError("401", status=401),
        errors.ModelRequestError("400", status=400),
        errors.ModelResponseError("bad"),
    ],
)
async def test_auth_request_and_response_errors_are_never_retried(error: errors.ModelError) -> None:
    sleeps = Sleeps()
    model = ScriptedModel([error, "never reached"])
    with pytest.raises(type(error)):
        await retrying(model, sleeps).complete(REQUEST)
    assert len(model.requests) == 1
    assert sleeps.delays == []


async def test_backoff_doubles_from_the_base_is_capped_and_fully_jittered() -> None:
    sleeps = Sleeps()
    error = errors.ModelConnectionError("down")
    model = ScriptedModel([error] * 4 + ["ok"])
    await retrying(model, sleeps, max_attempts=5, jitter=1.0).complete(REQUEST)
    assert sleeps.delays == [1.0, 2.0, 3.0, 3.0]  # 1, 2, 4→cap 3, 8→cap 3

    sleeps = Sleeps()
    model = ScriptedModel([error] * 3 + ["ok"])
    await retrying(model, sleeps, jitter=0.25).complete(REQUEST)
    assert sleeps.delays == [0.25, 0.5, 0.75]  # random() * capped exponential


async def test_retry_after_wins_over_backoff_for_rate_limits_and_server_errors() -> None:
    sleeps = Sleeps()
    model = ScriptedModel(
        [
            errors.ModelRateLimitError("429", retry_after=9.0),
            errors.ModelServerError("503", status=503, retry_after=2.5),
            "ok",
        ]
    )
    await retrying(model, sleeps).complete(REQUEST)
    assert sleeps.delays == [9.0, 2.5]


async def test_a_retry_after_beyond_the_limit_is_raised_instead_of_waited_out() -> None:
    sleeps = Sleeps()
    model = ScriptedModel([errors.ModelRateLimitError("429", retry_after=3600.0), "ok"])
    with pytest.raises(errors.ModelRateLimitError):
        await retrying(model, sleeps, max_retry_after_s=120.0).complete(REQUEST)
    assert sleeps.delays == []


async def test_exhausted_attempts_raise_the_last_error_itself() -> None:
    sleeps = Sleeps()
    last = errors.ModelServerError("third", status=502)
    model = ScriptedModel([errors.ModelServerError("first"), errors.ModelConnectionError("second"), last])
    with pytest.raises(errors.ModelServerError) as info:
        await retrying(model, sleeps, max_attempts=3).complete(REQUEST)
    assert info.value is last
    assert len(sleeps.delays) == 2


async def test_on_retry_is_told_about_each_wait() -> None:
    seen: list[RetryAttempt] = []
    error = errors.ModelConnectionError("down")
    client = RetryingClient(
        ScriptedModel([error, "ok"]), max_attempts=3, sleep=Sleeps(), random=lambda: 0.5, on_retry=seen.append
    )
    await client.complete(REQUEST)
    assert seen == [RetryAttempt(attempt=1, max_attempts=3, delay_s=0.25, error=error)]


async def test_a_stream_failing_before_its_first_event_is_retried() -> None:
    sleeps = Sleeps()
    model = ScriptedModel([errors.ModelServerError("503"), "streamed fine"])
    events: list[ModelEvent] = []
    async with retrying(model, sleeps).stream(REQUEST) as stream:
        async for event in stream:
            events.append(event)
    assert "".join(e.text for e in events if isinstance(e, ModelTextDelta)) == "streamed fine"
    assert isinstance(events[-1], ReplyDone)
    assert len(model.requests) == 2
    assert len(sleeps.delays) == 1


async def test_a_stream_failing_after_text_was_yielded_is_not_replayed() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        body = (
            'data: {"choices":[{"index":0,"delta":{"content":"partial "}}]}\n\n'
            f"data: {json.dumps({'error': {'message': 'upstream died'}})}\n\n"
        )
        return httpx.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    sleeps = Sleeps()
    client = retrying(OpenAIClient(http, base_url="http://llm.test/v1", model="m"), sleeps)
    texts: list[str] = []
    with pytest.raises(errors.ModelServerError, match="upstream died"):
        await drain(client, texts)
    assert texts == ["partial "]
    assert len(requests) == 1
    assert sleeps.delays == []


async def drain(client: RetryingClient, texts: list[str]) -> None:
    async with client.stream(REQUEST) as stream:
        async for event in stream:
            if isinstance(event, ModelTextDelta):
                texts.append(event.text)


async def test_stream_retries_give_up_with_the_last_error() -> None:
    sleeps = Sleeps()
    model = ScriptedModel([errors.ModelConnectionError("a"), errors.ModelConnectionError("b")])
    with pytest.raises(errors.ModelConnectionError, match="b"):
        await drain(retrying(model, sleeps, max_attempts=2), [])
    assert len(model.requests) == 2


def test_max_attempts_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        RetryingClient(ScriptedModel(), max_attempts=0)


def test_the_model_name_is_the_inner_clients() -> None:
    assert RetryingClient(ScriptedModel(model_name="inner-model")).model_name == "inner-model"
