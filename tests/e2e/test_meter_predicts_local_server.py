"""The cache meter predicts keel's own server: on a recorded multi-call session on SmolLM2
(turns with side calls between them), the `keel` simulator's reuse equals the server's own
`cached_tokens`, request by request. The meter renders the recorded requests with the
model's template and vocabulary (`jinja` renderer, `keel` dialect) and knows the reply tokens
the model evaluated; the server counts what it really reused."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from harness.cachemeter import JinjaRenderer, request_from_record
from harness.cachemeter._seq import pack
from harness.cachemeter.sim import KeelLocalSimulator, SimRequest
from harness.modelfiles import load_gguf_tokenizer, template_from_gguf
from harness.models.factory import local_client
from harness.models.local import find_weights, start_local_model
from harness.trace import TraceRecord, record_for_request
from harness.types import Message, ModelReply, ModelRequest

SYSTEM = "You are keel, a careful assistant who answers in one short sentence. " * 4


def _session() -> list[ModelRequest | str]:
    """The calls of a short session: main turns (their later turns filled in with the replies)
    and side calls (a summary, a fact extraction) between them."""
    return [
        "turn:My boat is called Heron.",
        ModelRequest(
            system="Summarize in five words.", messages=(Message("user", "Boats, sails and wind."),)
        ),
        "turn:I sail on Sundays.",
        ModelRequest(system="List facts.", messages=(Message("user", "User: I sail on Sundays."),)),
        "turn:What is my boat called?",
    ]


async def test_the_keel_simulator_predicts_the_servers_cache_reads(models_dir: Path) -> None:
    weights = await find_weights(model="smollm2-135m", models_dir=models_dir)
    conversation: list[Message] = []
    sent: list[tuple[ModelRequest, ModelReply]] = []
    async with (
        start_local_model(model="smollm2-135m", n_ctx=2048, models_dir=models_dir) as lm,
        httpx.AsyncClient(timeout=300) as http,
    ):
        client = local_client(http, lm.base_url, lm.model, 300, api_key=lm.api_key)
        for step in _session():
            if isinstance(step, str):
                conversation.append(Message("user", step.removeprefix("turn:")))
                request = ModelRequest(
                    system=SYSTEM, messages=tuple(conversation), max_tokens=8, temperature=0.0
                )
            else:
                request = ModelRequest(
                    system=step.system, messages=step.messages, max_tokens=8, temperature=0.0
                )
            reply = await client.complete(request)
            sent.append((request, reply))
            if isinstance(step, str):
                conversation.append(reply.message)
    tokenizer = load_gguf_tokenizer(weights.path)
    meter = JinjaRenderer(tokenizer, template_from_gguf(weights.path), dialect="keel")
    sim = KeelLocalSimulator(disk=False)
    predicted: list[int] = []
    reported: list[int] = []
    for i, (request, reply) in enumerate(sent):
        record = record_for_request(request, session_id="s", turn=i, model="m")
        line = json.loads(record.model_dump_json())  # through the trace file, as the meter reads it
        rendered = meter.render(request_from_record(TraceRecord.model_validate(line), line=i + 1))
        # The reply tokens the model evaluated: all of them, but the last when cut by max_tokens.
        out = tokenizer.encode(reply.message.content)
        evaluated = out[:-1] if reply.finish_reason == "length" else out
        fed = sim.feed(SimRequest(tokens=rendered.tokens, model="m", generated=pack(evaluated)))
        assert reply.usage is not None
        predicted.append(fed.reusable)
        reported.append(reply.usage.cache_read)
    assert predicted == reported
    assert reported[2] > reported[1] and reported[4] > reported[2], "turns resumed after the side calls"
