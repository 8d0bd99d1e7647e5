"""The embedded model server, for real: it starts on loopback, answers in the model's own
format, honours max_tokens with tools, streams tool calls, reports cache reads, and stops."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from harness.errors import LocalModelError
from harness.models.factory import local_client
from harness.models.local import LocalModel, find_weights, start_local_model
from harness.types import Message, ModelRequest, ToolSpec
from memory import memory_tool_schema
from prompts._text import load_text
from tests.harness.models.recorder import stream_all


def _memory_tool() -> ToolSpec:
    schema = memory_tool_schema(load_text("tool_memory"))
    params = schema["parameters"]
    assert isinstance(params, dict)
    return ToolSpec("memory", str(schema["description"]), params)


SYSTEM = "You are a helpful assistant for O'Neill & Sons. You keep the user's memory with the memory tool."


async def test_the_shared_server_answers_chat_completions(local_model: LocalModel) -> None:
    assert local_model.base_url.startswith("http://127.0.0.1:")
    async with httpx.AsyncClient(timeout=120) as http:
        bare = await http.post(
            f"{local_model.base_url}/chat/completions",
            json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8},
        )
        r = await http.post(
            f"{local_model.base_url}/chat/completions",
            json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8},
            headers={"Authorization": f"Bearer {local_model.api_key}"},
        )
    assert bare.status_code == 401, "another local process without the token gets nothing"
    assert r.status_code == 200
    body = r.json()
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["usage"]["prompt_tokens"] > 0
    assert body["usage"]["completion_tokens"] <= 8


async def test_max_tokens_is_honoured_when_the_model_may_call_tools(local_model: LocalModel) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        reply = await local_client(
            http, local_model.base_url, local_model.model, 300, api_key=local_model.api_key
        ).complete(
            ModelRequest(
                system=SYSTEM,
                messages=(Message("user", "Write a long poem about the sea, at least twenty lines."),),
                tools=(_memory_tool(),),
                max_tokens=6,
                temperature=0.0,
            )
        )
    assert reply.usage is not None and reply.usage.output <= 6
    assert reply.finish_reason in ("length", "stop", "tool_calls")


async def test_a_forced_memory_call_streams_as_a_tool_call_with_unescaped_text(
    local_model: LocalModel,
) -> None:
    request = ModelRequest(
        system=SYSTEM,
        messages=(Message("user", "Please remember: my name is Sam O'Neill and I work at Smith & Co."),),
        tools=(_memory_tool(),),
        tool_choice="memory",
        max_tokens=120,
        temperature=0.0,
    )
    async with httpx.AsyncClient(timeout=300) as http:
        client = local_client(http, local_model.base_url, local_model.model, 300, api_key=local_model.api_key)
        deltas, done = await stream_all(client, request)
    (call,) = done.message.tool_calls
    assert call.name == "memory"
    args = json.loads(call.arguments)  # grammar-constrained: always one JSON object
    assert isinstance(args, dict)
    raw = call.arguments + "".join(deltas)
    assert "&#39;" not in raw and "&amp;" not in raw and "\\u0027" not in raw


async def test_a_follow_up_sharing_the_prefix_reports_cached_tokens(local_model: LocalModel) -> None:
    first_messages = (Message("user", "My favourite colour is green. Reply with one word: OK."),)
    async with httpx.AsyncClient(timeout=300) as http:
        client = local_client(http, local_model.base_url, local_model.model, 300, api_key=local_model.api_key)
        first = await client.complete(
            ModelRequest(
                system=SYSTEM, messages=first_messages, tools=(_memory_tool(),), max_tokens=4, temperature=0.0
            )
        )
        second = await client.complete(
            ModelRequest(
                system=SYSTEM,
                messages=(*first_messages, first.message, Message("user", "And my cat is called Miso.")),
                tools=(_memory_tool(),),
                max_tokens=4,
                temperature=0.0,
            )
        )
    assert first.usage is not None and second.usage is not None
    # Everything up to the first user message was processed by the first request already.
    assert second.usage.cache_read >= first.usage.prompt - 2
    assert second.usage.input < second.usage.cache_read


async def test_the_server_process_is_gone_after_the_block(models_dir: Path) -> None:
    async with start_local_model(model="smollm2-135m", n_ctx=512, models_dir=models_dir) as lm:
        pid = lm.pid
        os.kill(pid, 0)  # alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_server_that_cannot_start_fails_with_a_clear_error(models_dir: Path) -> None:
    # A negative n_ctx is refused by llama.cpp at load time: the process exits before it is ready.
    with pytest.raises(LocalModelError, match=r"exited|did not answer"):
        async with start_local_model(
            model="smollm2-135m", n_ctx=-5, ready_timeout_s=60, models_dir=models_dir
        ):
            pass


async def test_a_users_own_gguf_runs_with_its_own_template(models_dir: Path) -> None:
    weights = await find_weights(model="smollm2-135m", models_dir=models_dir)
    async with (
        start_local_model(
            gguf=weights.path, gguf_sha256=weights.sha256, n_ctx=1024, models_dir=models_dir
        ) as lm,
        httpx.AsyncClient(timeout=120) as http,
    ):
        assert lm.model == weights.path.stem.lower()
        assert "your GGUF file" in lm.source
        reply = await local_client(http, lm.base_url, lm.model, 120, api_key=lm.api_key).complete(
            ModelRequest(system="", messages=(Message("user", "Say hello."),), max_tokens=4)
        )
    assert reply.usage is not None and reply.usage.output <= 4
