"""keel against llama-cpp-python's own OpenAI-compatible server (`python -m llama_cpp.server
--chat_format chatml-function-calling`) in a subprocess, on SmolLM2-135M.

That server fails a streamed request with tools once its model picks a tool ("Automatic
streaming tool choice is not supported": the stream ends after its first chunk). keel asks
again unstreamed, reads the call, sends the tools unstreamed from then on, and the tool's
result goes back in a shape the server accepts.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from harness.config import load_config
from harness.models.base import ModelTextDelta, ReplyDone
from harness.models.factory import open_model
from harness.models.local import find_weights
from harness.models.local._start import free_port
from harness.types import Message, ModelReply, ModelRequest, ToolCall, ToolSpec

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("pydantic_settings") is None,
    reason="needs llama-cpp-python's server extras: pip install fastapi pydantic-settings 'starlette-context<0.4'",
)

WEATHER = ToolSpec(
    "get_weather",
    "Get the weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SYSTEM = "You always call functions. Never answer in words."


@pytest.fixture(scope="module")
def server(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    weights = anyio.run(lambda: find_weights(model="smollm2-135m", models_dir=models_dir))
    port = free_port()
    log = tmp_path_factory.mktemp("llama-cpp-server") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "llama_cpp.server", "--model", str(weights.path),
                "--chat_format", "chatml-function-calling", "--host", "127.0.0.1",
                "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/v1"
        for _ in range(240):
            try:
                if httpx.get(f"{url}/models", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text(errors='replace')[-2000:]}")
            anyio.run(anyio.sleep, 0.5)
        yield url, log
    finally:
        proc.terminate()
        proc.wait(30)


async def _ask(client_stream: AsyncIterator[object]) -> ModelReply:
    async for ev in client_stream:
        if isinstance(ev, ReplyDone):
            return ev.reply
        assert isinstance(ev, ModelTextDelta)
    raise AssertionError("no reply")


def _posts(log: Path) -> int:
    return log.read_text(errors="replace").count('"POST /v1/chat/completions')


async def test_a_tool_using_turn_works_against_llama_cpp_pythons_own_server(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, log = server
    cfg = tmp_path / "keel.yaml"
    cfg.write_text(
        f"model: {{provider: openai, base_url: '{url}', name: smol, tool_results: as_user, timeout_s: 300}}\n"
    )
    config = load_config(cfg)
    ask = ModelRequest(
        system=SYSTEM, messages=(Message("user", "get_weather for Paris"),), tools=(WEATHER,), temperature=0
    )
    async with (
        httpx.AsyncClient(trust_env=False) as http,
        open_model(config, home=tmp_path, environ={"OPENAI_API_KEY": "none"}, http=http) as model,
    ):
        before = _posts(log)
        async with model.stream(ask) as events:
            first = await _ask(events)
        refused_then_asked = _posts(log) - before
        (call,) = first.message.tool_calls
        assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
        assert refused_then_asked == 2, "the streamed request was refused, then sent unstreamed"
        # The result goes back (as a user message this server's template keeps), and tools
        # are sent unstreamed from now on: one request.
        follow = ModelRequest(
            system=SYSTEM,
            messages=(
                ask.messages[0],
                Message("assistant", "", tool_calls=(ToolCall(call.id, call.name, call.arguments),)),
                Message("tool", "Sunny, 24 °C.", tool_call_id=call.id, name=call.name),
            ),
            tools=(WEATHER,),
            temperature=0,
            max_tokens=32,
        )
        before = _posts(log)
        async with model.stream(follow) as events:
            second = await _ask(events)
        assert _posts(log) - before == 1
    assert second.message.content or second.message.tool_calls
