"""A whole session against a misbehaving real HTTP server: clear errors, an intact transcript."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from harness.errors import (
    ConfigError,
    ModelConnectionError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)
from harness.events import Warning
from harness.models.openai import OpenAIClient
from harness.models.retry import RetryingClient
from harness.testing import FakeTokenizer, config, run_turn
from harness.types import Message
from harness.wiring import SessionOptions, open_session
from tests.harness.models.faultserver import Drip, Drop, FaultServer, Reply, json_reply, sse_reply


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
            async with open_session(
                config(), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
            ) as s:
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
            open_session(
                config(), SessionOptions(model=_client(http, server), home=home, tokenizer=FakeTokenizer())
            ) as s,
        ):
            await run_turn(s, "hello")
            assert s.transcript[-1].content == "made it"
            assert s.calls.usage_total.cache_read == 100
        assert len(server.requests) == 3


def _streamed(text: str) -> Reply:
    return sse_reply(
        [
            'data: {"model":"m","choices":[{"index":0,"delta":{"content":' + json.dumps(text) + "}}]}",
            'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
            '"usage":{"prompt_tokens":50,"completion_tokens":3}}',
            "data: [DONE]",
        ]
    )


def _remote(server: FaultServer, **extra: str) -> dict[str, str]:
    return {
        "model__provider": "openai",
        "model__base_url": server.base_url,
        "model__name": "main-model",
        "model__retry__base_delay_s": "0",
        "model__retry__max_delay_s": "0",
        **extra,
    }


async def test_a_retried_model_call_shows_a_warning_in_the_turn(home: Path) -> None:
    with FaultServer([Reply(503, b'{"error": {"message": "overloaded"}}'), _streamed("made it")]) as server:
        async with open_session(
            config(**_remote(server)),
            SessionOptions(home=home, tokenizer=FakeTokenizer(), environ={"OPENAI_API_KEY": "k"}),
        ) as s:
            events = await run_turn(s, "hello")
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert len(warnings) == 1 and "retrying" in warnings[0] and "attempt 2 of 4" in warnings[0]
    assert s.transcript[-1].content == "made it"


async def test_the_summary_goes_to_compression_summary_model_on_the_same_endpoint(home: Path) -> None:
    script = [_streamed(f"answer {i} " + "word " * 40) for i in range(3)] + [_streamed("the checkpoint")]
    with FaultServer(script) as server:
        cfg = config(
            **_remote(
                server,
                compression__summary_model="small-model",
                compression__flush="off",
                compression__protect_first_n="0",
                compression__protect_last_n="2",
            )
        )
        async with open_session(
            cfg, SessionOptions(home=home, tokenizer=FakeTokenizer(), environ={"OPENAI_API_KEY": "k"})
        ) as s:
            for i in range(3):
                await run_turn(s, f"question {i} " + "word " * 40)
            await s.compress()
    models = [r.body["model"] for r in server.requests if isinstance(r.body, dict)]
    assert models == ["main-model"] * 3 + ["small-model"]


async def test_a_summary_model_with_the_embedded_model_is_a_clear_config_error(home: Path) -> None:
    cfg = config(compression__summary_model="small-model")
    with pytest.raises(
        ConfigError, match="summary_model 'small-model' cannot be used with the embedded model"
    ):
        async with open_session(cfg, SessionOptions(home=home, tokenizer=FakeTokenizer(), environ={})):
            pass
