"""The embedded server's prefix cache, for real on SmolLM2 (server counts only, no timings):
a side call between two turns costs the conversation nothing, and a second server process on
the same home resumes from the stable prefix the first one saved."""

from __future__ import annotations

from pathlib import Path

import httpx

from harness.models.factory import local_client
from harness.models.local import LocalModel, ServerOptions, start_local_model
from harness.types import Message, ModelReply, ModelRequest

SYSTEM = (
    "You are keel, a careful assistant. You keep the user's notes, answer briefly and never "
    "invent facts. When the user states a durable fact, you remember it. "
) * 8


async def _ask(lm: LocalModel, request: ModelRequest) -> ModelReply:
    async with httpx.AsyncClient(timeout=300) as http:
        return await local_client(http, lm.base_url, lm.model, 300, api_key=lm.api_key).complete(request)


def _turn(*messages: Message, system: str = SYSTEM) -> ModelRequest:
    return ModelRequest(system=system, messages=messages, max_tokens=4, temperature=0.0)


async def test_a_side_call_between_two_turns_keeps_the_conversations_prefix(small_model: LocalModel) -> None:
    first_user = Message("user", "My boat is called Heron. Reply OK.")
    first = await _ask(small_model, _turn(first_user))
    side = await _ask(
        small_model, _turn(Message("user", "Summarize: the weather was fine all week."), system="Summarize.")
    )
    second = await _ask(
        small_model, _turn(first_user, first.message, Message("user", "What is my boat called?"))
    )
    assert first.usage is not None and side.usage is not None and second.usage is not None
    assert side.usage.cache_read < 8, "the side call shares nothing with the conversation"
    # The second turn resumes from the whole first request (saved before the side call ran).
    assert second.usage.cache_read >= first.usage.prompt


async def test_a_second_server_process_resumes_from_the_saved_stable_prefix(
    tmp_path: Path, models_dir: Path
) -> None:
    options = ServerOptions(cache_dir=tmp_path / "cache", cache_min_tokens=128)
    replies = []
    for text in ("Hello! Reply OK.", "Good morning! Reply OK."):
        async with start_local_model(
            model="smollm2-135m", n_ctx=2048, models_dir=models_dir, server=options
        ) as lm:
            replies.append(await _ask(lm, _turn(Message("user", text))))
    cold, warm = (r.usage for r in replies)
    assert cold is not None and warm is not None
    assert cold.cache_read == 0
    # The new process evaluated only what follows the system turn.
    assert warm.cache_read >= cold.prompt - 40
    assert warm.input <= 40
    assert len(list((tmp_path / "cache").glob("*/*.kv"))) == 1
