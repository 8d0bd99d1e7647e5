"""The cache meter renders exactly what keel's embedded server renders: one template renderer.

A request keel sends goes two ways here, as it does in real use: as the chat-completions body
keel's OpenAI client posts (`build_body`) into the server's engine (`Engine.prepare`, which
renders and tokenizes with llama.cpp's own tokenizer), and as the trace line keel writes
(`record_for_request`, through JSON) into the meter's `jinja` renderer in the `keel` dialect with
the GGUF's vocabulary. Both must give the same prompt text and the same token ids, on the real
GGUFs of SmolLM2 (no tool support: tools spelled out) and the default Qwen2.5-Coder-1.5B
(native tools).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from harness.cachemeter import JinjaRenderer, MeterRequest, request_from_record
from harness.config import LocalModelName
from harness.modelfiles import load_gguf_tokenizer, template_from_gguf
from harness.models.local import BUILTIN_MODELS, installed_part, resolve_weights
from harness.models.local._engine import Engine
from harness.models.openai._wire import build_body
from harness.trace import TraceRecord, TraceSlot, record_for_request
from harness.types import Message, ModelRequest, ToolCall, ToolSpec

IDENTITY = "You are keel, a careful assistant.\n\n"
MEMORY = "MEMORY (your personal notes)\nSam O'Neill uses vim & tmux\n\n"
SESSION = "Conversation started: Wednesday, November 25, 2026"
SYSTEM = IDENTITY + MEMORY + SESSION
SLOTS = [
    TraceSlot(name="identity", start=0, end=len(IDENTITY)),
    TraceSlot(name="memory", start=len(IDENTITY), end=len(IDENTITY) + len(MEMORY)),
    TraceSlot(name="session", start=len(IDENTITY) + len(MEMORY), end=len(SYSTEM)),
]
TOOLS = (
    ToolSpec(
        "memory",
        'Save durable facts — e.g. "O\'Neill & co" <verbatim>.',
        {"type": "object", "properties": {"action": {"type": "string"}, "content": {"type": "string"}}},
    ),
    ToolSpec(
        "session_search",
        "Search past sessions.",
        {"type": "object", "properties": {"query": {"type": "string"}}},
    ),
)
CALL = ToolCall("call_1", "memory", '{"action": "add", "content": "Sam uses vim"}')
CONVERSATION = (
    Message("user", "Remember: I'm Sam O'Neill & I use vim 🙂"),
    Message("assistant", "", tool_calls=(CALL,)),
    Message("tool", '{"success": true}', tool_call_id="call_1", name="memory"),
    Message("tool", '{"note": "a second result"}', tool_call_id="call_2", name="memory"),
    Message("assistant", "Saved."),
    Message("user", "plain text", api_content="plain text\n\n<memory-context>\nrecalled\n</memory-context>"),
)
REQUESTS = {
    "turn": ModelRequest(system=SYSTEM, messages=CONVERSATION, tools=TOOLS),
    "no tools": ModelRequest(system=SYSTEM, messages=CONVERSATION[:1]),
    "no system": ModelRequest(system="", messages=CONVERSATION[:1], tools=TOOLS[:1]),
}
MODELS: tuple[LocalModelName, ...] = ("smollm2-135m", "qwen2.5-coder-1.5b")


class _Server:
    """The engine of keel's server over a vocabulary-only llama.cpp model (no weights are run)."""

    def __init__(self, gguf: Path) -> None:
        import llama_cpp

        from harness.models.local._child import chat_template

        self.llm = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, n_ctx=4096, verbose=False)
        self.engine = Engine(
            self.llm,
            chat_template(self.llm, str(gguf)),
            name="m",
            max_tokens_cap=8,
            sample=lambda *_: iter(()),
            state=list,
            stop_ids=frozenset(),
            banned_ids=(),
        )


@pytest.fixture(scope="module", params=MODELS)
def gguf(request: pytest.FixtureRequest, models_dir: Path) -> Path:
    name: LocalModelName = request.param
    model = BUILTIN_MODELS[name]
    if importlib.util.find_spec("llama_cpp") is None or any(installed_part(p) is None for p in model.parts):
        pytest.skip(f"{model.title} needs the local extra: {model.install}")
    return resolve_weights(name=name, gguf=None, gguf_sha256=None, models_dir=models_dir).path


def _recorded(request: ModelRequest) -> MeterRequest:
    record = record_for_request(
        request, session_id="s", turn=1, model="m", slots=SLOTS if request.system else ()
    )
    line = json.loads(record.model_dump_json())  # through the file, as the meter reads it
    return request_from_record(TraceRecord.model_validate(line), line=1)


@pytest.mark.parametrize("which", sorted(REQUESTS))
def test_the_meter_renders_the_servers_bytes_and_tokens(gguf: Path, which: str) -> None:
    server = _Server(gguf)
    request = REQUESTS[which]
    served = server.engine.prepare(build_body(request, model="m", stream=False))
    meter = JinjaRenderer(load_gguf_tokenizer(gguf), template_from_gguf(gguf), dialect="keel")
    recorded = _recorded(request)
    assert meter.prompt_text(recorded) == served.prompt
    rendered = meter.render(recorded)
    assert rendered.ids() == served.tokens
    # Two tool results in a row share one user turn in both templates: rendering the first
    # alone closes that turn, so the meter cannot cut between them, and says so.
    assert set(rendered.warnings) <= {
        "the chat template rewrites earlier turns; messages 2..3 share one segment"
    }
    if which == "turn":
        assert "O'Neill & co" in served.prompt and "🙂" in served.prompt  # nothing escaped
        assert [s.index for s in rendered.segments if s.kind == "message"] == [0, 1, 2, 4, 5]
        memory = next(s for s in rendered.segments if s.slot == "memory")
        text = server.llm.detokenize(served.tokens[memory.start : memory.end]).decode("utf-8")
        assert "Sam O'Neill uses vim & tmux" in text


def test_the_hf_dialect_drops_tools_the_template_never_reads_where_keel_spells_them_out(
    models_dir: Path,
) -> None:
    model = BUILTIN_MODELS["smollm2-135m"]
    path = installed_part(model.parts[0])
    if path is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(f"{model.title} needs the local extra: {model.install}")
    tokenizer = load_gguf_tokenizer(path)
    recorded = _recorded(REQUESTS["turn"])
    hf = JinjaRenderer(tokenizer, template_from_gguf(path), dialect="hf").prompt_text(recorded)
    keel = JinjaRenderer(tokenizer, template_from_gguf(path), dialect="keel").prompt_text(recorded)
    assert "<tools>" not in hf and "<tool_call>" not in hf
    assert "<tools>" in keel and '"name": "memory", "arguments": {"action": "add"' in keel
