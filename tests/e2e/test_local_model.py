"""The embedded model server starts on loopback, answers, and stops."""

from __future__ import annotations

import os

import httpx
import pytest

from harness.errors import LocalModelError
from harness.models.local import LocalModel, find_gguf, start_local_model


async def test_the_shared_server_answers_chat_completions(local_model: LocalModel) -> None:
    assert local_model.base_url.startswith("http://127.0.0.1:")
    async with httpx.AsyncClient(timeout=60) as http:
        r = await http.post(
            f"{local_model.base_url}/chat/completions",
            json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8},
        )
    assert r.status_code == 200
    body = r.json()
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["usage"]["prompt_tokens"] > 0


async def test_the_server_process_is_gone_after_the_block() -> None:
    async with start_local_model(n_ctx=512) as lm:
        pid = lm.pid
        os.kill(pid, 0)  # alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_gguf_ships_inside_the_installed_package() -> None:
    path = find_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


async def test_a_server_that_cannot_start_fails_with_a_clear_error() -> None:
    # A negative n_ctx is refused by llama.cpp at load time: the process exits before it is ready.
    with pytest.raises(LocalModelError, match=r"exited|did not answer"):
        async with start_local_model(n_ctx=-5, ready_timeout_s=60):
            pass
