"""The small-window local layout: memory, user and session slots last, sent as a second system
message that chat templates render after the tool schemas, so a memory write re-reads only
them (and the conversation). API models keep the seeds' order and one system message."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.modelfiles import TemplateRenderer, load_gguf_tokenizer, smollm2_gguf_path, template_from_gguf
from harness.models.local._prefix import common_prefix
from harness.models.openai._wire import build_body
from harness.testing import FakeMemory, ScriptedModel, config, make_session, run_turn, say
from harness.types import ModelRequest
from tests.harness.models.local.test_engine import TOOL, _engine


async def _first_request(memory: FakeMemory, **env: str) -> ModelRequest:
    model = ScriptedModel([say("ok")])
    async with make_session(model, memory=memory, cfg=config(**env)) as session:
        await run_turn(session, "hi")
    return model.requests[0]


async def test_the_local_default_puts_memory_last_and_marks_where_it_starts() -> None:
    request = await _first_request(FakeMemory(entries=["The user's name is Ana."]))
    cut = request.stable_prefix_chars
    assert cut is not None and 0 < cut < len(request.system)
    head, tail = request.system[:cut], request.system[cut:]
    assert "Ana" not in head and "Ana" in tail
    body = build_body(request, model="m", stream=False, split_system=True)
    messages = body["messages"]
    assert isinstance(messages, list)
    assert [m["role"] for m in messages[:3]] == ["system", "system", "user"]  # type: ignore[index, call-overload]
    assert messages[0]["content"] == head.rstrip() and "Ana" in messages[1]["content"]  # type: ignore[index, call-overload, operator]


async def test_api_models_keep_the_seeds_order_and_one_system_message() -> None:
    memory = FakeMemory(entries=["The user's name is Ana."])
    request = await _first_request(memory, model__provider="openai", model__name="gpt")
    assert request.stable_prefix_chars == len(request.system)
    body = build_body(request, model="m", stream=False, split_system=True)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]  # type: ignore[index, call-overload, union-attr]


async def test_the_head_is_byte_stable_across_a_memory_write() -> None:
    before = await _first_request(FakeMemory(entries=["Likes tea."]))
    after = await _first_request(FakeMemory(entries=["Likes tea.", "The user's name is Ana."]))
    assert before.stable_prefix_chars is not None and after.stable_prefix_chars is not None
    assert before.system[: before.stable_prefix_chars] == after.system[: after.stable_prefix_chars]


def _smollm2() -> Path:
    try:
        return smollm2_gguf_path()
    except Exception as exc:  # the weights package is optional
        pytest.skip(f"needs the SmolLM2 weights package: {exc}")


async def test_on_a_real_template_a_memory_write_rereads_only_the_tail() -> None:
    gguf = _smollm2()
    tok = load_gguf_tokenizer(gguf)
    renderer = TemplateRenderer(template_from_gguf(gguf))
    rendered: dict[str, list[int]] = {}
    for split in (True, False):
        for name, entries in (
            ("before", ["Likes tea."]),
            ("after", ["Likes tea.", "The user's name is Ana."]),
        ):
            env = {} if split else {"prompt__memory_after_tools": "false"}
            request = await _first_request(FakeMemory(entries=entries), **env)
            body = build_body(request, model="m", stream=False, split_system=split)
            text = renderer.render(body["messages"], body.get("tools") or [], dialect="keel")  # type: ignore[arg-type]
            rendered[f"{name} {split}"] = tok.encode(text)

    def reread(split: bool) -> float:
        a, b = rendered[f"before {split}"], rendered[f"after {split}"]
        return (len(b) - common_prefix(a, b)) / len(b)

    assert reread(True) < 0.25 < reread(False)


def test_the_disk_cache_keeps_only_the_first_system_message_and_the_tools(tmp_path: Path) -> None:
    from harness.models.local._disk import DiskPrefixCache

    disk = DiskPrefixCache(tmp_path, fingerprint="f", max_bytes=1 << 20, max_files=4, min_tokens=1)
    engine, _, _ = _engine("ok", n_ctx=4000, disk=disk)
    head = "You are keel. " * 10
    req = engine.prepare(
        {
            "messages": [
                {"role": "system", "content": head},
                {"role": "system", "content": "MEMORY: likes tea"},
                {"role": "user", "content": "hi"},
            ],
            "tools": [TOOL],
        }
    )
    assert req.stable == len(f"<|system|>{head}\n")
