"""A whole session against a misbehaving real HTTP server: clear errors, an intact transcript."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from harness.errors import ModelConnectionError, ModelResponseError, ModelServerError, ModelTimeoutError
from harness.loop.open import open_session
from harness.models.openai import OpenAIClient
from harness.models.retry import RetryingClient
from harness.testing import FakeTokenizer, config, run_turn
from harness.types import Message
from tests.harness.models.faultserver import Drip, Drop, FaultServer, Reply, json_reply


def _completion(text: str) -> Reply:
    return json_reply(
        {
            "id": "x",
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": 120,
                "completion_tokens": 4,
                "prompt_tokens_details": {"cached_tokens": 100},
            },
        }
    )


async def _no_sleep(_: float) -> None:
    return None


def _client(http: httpx.AsyncClient, server: FaultServer, *, timeout_s: float = 5.0) -> RetryingClient:
    inner = OpenAIClient(
        http, base_url=server.base_url, model="m", timeout_s=timeout_s, stream_with_tools=False
    )
    return RetryingClient(inner, max_attempts=3, base_delay_s=0.0, max_delay_s=0.0, sleep=_no_sleep)


def _roles(messages: tuple[Message, ...]) -> list[str]:
    return [m.role for m in messages]


@pytest.mark.parametrize(
    ("faults", "error"),
    [
        ([Reply(500, b'{"error": {"message": "boom"}}')] * 3, ModelServerError),
        ([Reply(200, b"<html>not json</html>")], ModelResponseError),
        ([Drop()] * 3, ModelConnectionError),
        ([Drip((b'{"id": "x", ', b'"choices": []}'), interval_s=2.0)] * 3, ModelTimeoutError),
    ],
    ids=["500s", "garbage", "dropped", "slow"],
)
async def test_a_failing_endpoint_raises_a_clear_error_and_the_transcript_stays_whole(
    home: Path, faults: list[Reply | Drop | Drip], error: type[Exception]
) -> None:
    with FaultServer([_completion("first answer"), *faults, _completion("after recovery")]) as server:
        async with httpx.AsyncClient() as http:
            model = _client(http, server, timeout_s=1.0)
            async with open_session(config(), model=model, home=home, tokenizer=FakeTokenizer()) as s:
                await run_turn(s, "hello")
                before = s.transcript
                with pytest.raises(error):
                    await run_turn(s, "this one fails")
                # the failed turn kept the user's message and nothing half-made
                assert s.transcript[: len(before)] == before
                assert _roles(s.transcript) == ["user", "assistant", "user"]
                await run_turn(s, "try again")
                assert s.transcript[-1].content == "after recovery"
                assert _roles(s.transcript) == ["user", "assistant", "user", "user", "assistant"]


async def test_transient_500s_and_a_429_are_retried_inside_one_turn(home: Path) -> None:
    script = [
        Reply(500, b"{}"),
        Reply(429, b'{"error": {"message": "slow down"}}', headers={"Retry-After": "0"}),
        _completion("made it"),
    ]
    with FaultServer(script) as server:
        async with (
            httpx.AsyncClient() as http,
            open_session(config(), model=_client(http, server), home=home, tokenizer=FakeTokenizer()) as s,
        ):
            await run_turn(s, "hello")
            assert s.transcript[-1].content == "made it"
            assert s.usage_total.cache_read == 100
        assert len(server.requests) == 3
