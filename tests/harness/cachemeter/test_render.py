"""Renderers: deterministic token ids with exact segment boundaries, in three formats."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import jinja2.sandbox
import pytest
from tokenizers import Tokenizer

from harness.cachemeter import (
    CanonicalRenderer,
    ChatMLRenderer,
    JinjaRenderer,
    MeterBreakpoint,
    MeterMessage,
    MeterRequest,
    MeterSlot,
    MeterTool,
    MeterToolCall,
    Renderer,
    load_meter_tokenizer,
    make_renderer,
    read_requests,
)
from harness.cachemeter.traces import request_from_chat
from harness.modelfiles import ChatTemplate, smollm2_gguf_path, template_from_gguf
from harness.tokens import CharTokenizer, TiktokenTokenizer

REPO = Path(__file__).resolve().parents[3]
IDENTITY = "You are keel, a careful assistant.\n"
MEMORY = "MEMORY\nuser likes tea\n"
SYSTEM = IDENTITY + MEMORY + "Conversation started: Monday"


def make_request(**overrides: object) -> MeterRequest:
    fields: dict[str, object] = {
        "kind": "keel",
        "model": "m",
        "system": SYSTEM,
        "slots": (
            MeterSlot("identity", 0, len(IDENTITY)),
            MeterSlot("memory", len(IDENTITY), len(IDENTITY) + len(MEMORY)),
            MeterSlot("session", len(IDENTITY) + len(MEMORY), len(SYSTEM)),
        ),
        "tools": (MeterTool("memory", "Save a durable fact.", {"type": "object"}),),
        "messages": (
            MeterMessage("user", "what do I like?"),
            MeterMessage("assistant", "", (MeterToolCall("c1", "memory", '{"q": "likes"}'),)),
            MeterMessage("tool", "tea", tool_call_id="c1", name="memory"),
        ),
    }
    fields.update(overrides)
    return MeterRequest(**fields)  # type: ignore[arg-type]  # test builder


@pytest.fixture(scope="module")
def cl100k() -> TiktokenTokenizer:
    tok = load_meter_tokenizer("cl100k")
    assert isinstance(tok, TiktokenTokenizer)
    return tok


def _text(tok: TiktokenTokenizer, ids: list[int]) -> str:
    text: str = tok._enc.decode(ids)  # type: ignore[attr-defined]  # tiktoken.Encoding, for reading tests only
    return text


def test_canonical_renders_tools_then_system_slots_then_messages(cl100k: TiktokenTokenizer) -> None:
    r = CanonicalRenderer(cl100k).render(make_request())
    kinds = [(s.kind, s.slot, s.index) for s in r.segments]
    assert kinds == [
        ("tools", None, None),
        ("system", "identity", None),
        ("system", "memory", None),
        ("system", "session", None),
        ("message", None, 0),
        ("message", None, 1),
        ("message", None, 2),
    ]
    ids = r.ids()
    text = {(s.kind, s.slot, s.index): _text(cl100k, ids[s.start : s.end]) for s in r.segments}
    assert text[("tools", None, None)].startswith('[{"description":"Save a durable fact.","name":"memory"')
    assert text[("system", "memory", None)] == MEMORY
    assert text[("message", None, 1)].startswith('{"content":"","role":"assistant","tool_calls"')
    assert r.segments[-1].end == r.n_tokens
    assert all(a.end == b.start for a, b in zip(r.segments, r.segments[1:], strict=False))


def test_chatml_wraps_turns_and_ends_with_the_generation_prompt(cl100k: TiktokenTokenizer) -> None:
    r = ChatMLRenderer(cl100k).render(make_request())
    ids = r.ids()
    assert _text(cl100k, ids).startswith("<|im_start|>system\n# Tools\n")
    gen = r.segments[-1]
    assert gen.kind == "generation"
    assert _text(cl100k, ids[gen.start :]) == "<|im_start|>assistant\n"
    tool_turn = next(s for s in r.segments if s.index == 1)
    assert '<tool_call>\n{"name": "memory", "arguments": {"q": "likes"}}\n</tool_call>' in _text(
        cl100k, ids[tool_turn.start : tool_turn.end]
    )
    memory = next(s for s in r.segments if s.slot == "memory")
    assert _text(cl100k, ids[memory.start : memory.end]) == MEMORY


def test_breakpoints_map_to_the_end_of_their_part() -> None:
    request = make_request(
        breakpoints=(
            MeterBreakpoint("tools"),
            MeterBreakpoint("system", system_chars=len(IDENTITY)),
            MeterBreakpoint("message", index=1),
            MeterBreakpoint("message", index=9),
        )
    )
    r = CanonicalRenderer(CharTokenizer()).render(request)
    seg = {(s.kind, s.slot, s.index): s for s in r.segments}
    assert r.breakpoints == (
        seg[("tools", None, None)].end,
        seg[("system", "identity", None)].end,
        seg[("message", None, 1)].end,
    )
    assert any("message 9" in w for w in r.warnings)
    assert seg[("message", None, 2)].end in r.boundaries
    assert seg[("system", "session", None)].end in r.boundaries


@pytest.mark.parametrize("name", ["canonical", "chatml"])
def test_a_conversation_that_only_grew_renders_to_an_extension(name: str) -> None:
    renderer = make_renderer(name, CharTokenizer())  # type: ignore[arg-type]  # parametrized literal
    short = make_request()
    longer = make_request(messages=(*short.messages, MeterMessage("assistant", "You like tea.")))
    a, b = renderer.render(short), renderer.render(longer)
    head = a.generation_start
    assert b.tokens[: 4 * head] == a.tokens[: 4 * head]


def test_a_render_resumed_from_a_recent_one_equals_a_fresh_render() -> None:
    # The canonical renderer resumes a request from a recent one whose messages began at the
    # same token position with the same first messages; each result must equal what a
    # renderer with no past renders.
    base = make_request()
    grown = (*base.messages, MeterMessage("assistant", "You like tea."), MeterMessage("user", "and?"))
    marked = (MeterBreakpoint("system", system_chars=len(IDENTITY)), MeterBreakpoint("message", index=3))
    other_memory = IDENTITY + "MEMORY\nuser likes rum\n" + "Conversation started: Monday"
    sequence = [
        base,
        make_request(messages=grown),  # grew: resumes from `base`
        make_request(messages=grown, breakpoints=marked),  # same messages, new breakpoints
        make_request(messages=(grown[0], MeterMessage("assistant", "rewritten"), *grown[2:])),
        make_request(messages=grown[:2]),  # shorter than every kept render
        make_request(messages=grown, system=other_memory),  # another system prompt, as long
        make_request(messages=grown, tools=()),  # messages begin elsewhere: nothing to resume
        make_request(messages=(*grown, MeterMessage("assistant", "More."))),
        make_request(messages=()),
    ]
    kept = CanonicalRenderer(CharTokenizer())
    for request in sequence:
        assert kept.render(request) == CanonicalRenderer(CharTokenizer()).render(request)


def _fingerprint(renderer: Renderer) -> str:
    return hashlib.sha256(b"".join(renderer.render(make_request()).tokens for _ in range(2))).hexdigest()


_CHILD = """
import hashlib, sys
sys.path.insert(0, {tests!r})
from harness.cachemeter import load_meter_tokenizer, make_renderer
from test_render import make_request
r = make_renderer({name!r}, load_meter_tokenizer("cl100k"))
print(hashlib.sha256(b"".join(r.render(make_request()).tokens for _ in range(2))).hexdigest())
"""


@pytest.mark.parametrize("name", ["canonical", "chatml", "jinja"])
def test_rendering_is_deterministic_across_calls_and_processes(name: str, cl100k: TiktokenTokenizer) -> None:
    renderer = make_renderer(name, cl100k)  # type: ignore[arg-type]  # parametrized literal
    first = renderer.render(make_request())
    assert make_renderer(name, cl100k).render(make_request()) == first  # type: ignore[arg-type]  # as above
    assert renderer.render(make_request()) == first  # the memo gives the same answer
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "random"}
    child = _CHILD.format(tests=str(Path(__file__).parent), name=name)
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == _fingerprint(renderer)


def test_jinja_renders_with_the_smollm2_template_from_the_gguf(cl100k: TiktokenTokenizer) -> None:
    template = template_from_gguf(smollm2_gguf_path())
    assert template.bos_token == "<|im_start|>"
    assert "add_generation_prompt" in template.source
    renderer = JinjaRenderer(cl100k, template)
    assert not renderer.uses_tools
    r = renderer.render(make_request())
    ids = r.ids()
    by_kind = [(s.kind, s.slot, s.index) for s in r.segments]
    # The template never reads `tools`: a server using it sends none, so neither do we.
    assert "tools" not in {kind for kind, _, _ in by_kind}
    assert any("never uses `tools`" in n for n in r.notices)
    assert r.warnings == ()
    assert ("system", "memory", None) in by_kind
    assert ("message", None, 2) in by_kind
    memory = next(s for s in r.segments if s.slot == "memory")
    assert _text(cl100k, ids[memory.start : memory.end]) == MEMORY
    identity = next(s for s in r.segments if s.slot == "identity")
    assert _text(cl100k, ids[identity.start : identity.end]) == "<|im_start|>system\n" + IDENTITY
    assert _text(cl100k, ids[r.generation_start :]) == "<|im_start|>assistant\n"
    assert _text(cl100k, ids).startswith("<|im_start|>system\nYou are keel")


def _plain_render(source: str, messages: list[dict[str, str]], **extra: object) -> str:
    """The template rendered the way Hugging Face's apply_chat_template does, with jinja2 alone."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(source).render(messages=messages, add_generation_prompt=True, **extra)


def test_a_template_that_drops_tools_counts_what_an_independent_render_counts(bpe_dir: Path) -> None:
    source = template_from_gguf(smollm2_gguf_path()).source  # SmolLM2's: never reads `tools`
    tokenizer = load_meter_tokenizer(bpe_dir)
    request = make_request(slots=())
    ours = JinjaRenderer(tokenizer, ChatTemplate(source, origin="smollm2")).render(request)
    raw = [{"role": "system", "content": SYSTEM}] + [
        {"role": m.role, "content": m.content} for m in request.messages
    ]
    library = Tokenizer.from_file(str(bpe_dir / "tokenizer.json"))
    plain = library.encode(_plain_render(source, raw), add_special_tokens=False).ids
    assert ours.n_tokens == len(plain)
    assert ours.ids() == plain


def test_several_system_messages_render_as_the_template_sees_them(bpe_dir: Path) -> None:
    raw = [
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "hi"},
    ]
    request = request_from_chat({"model": "m", "messages": json.loads(json.dumps(raw))})
    assert request.system_messages == ("You are a careful assistant.", "Answer briefly.")
    tokenizer = load_meter_tokenizer(bpe_dir)
    library = Tokenizer.from_file(str(bpe_dir / "tokenizer.json"))
    source = template_from_gguf(smollm2_gguf_path()).source
    ours = JinjaRenderer(tokenizer, ChatTemplate(source, origin="smollm2")).render(request)
    plain = library.encode(_plain_render(source, raw), add_special_tokens=False).ids
    assert ours.ids() == plain
    assert [s.slot for s in ours.segments if s.kind == "system"] == ["system[0]", "system[1]"]
    merged = [{"role": "system", "content": request.system}, {"role": "user", "content": "hi"}]
    assert len(library.encode(_plain_render(source, merged), add_special_tokens=False).ids) < len(plain)
    chatml = ChatMLRenderer(tokenizer).render(request)
    assert [s.slot for s in chatml.segments if s.kind == "system"] == ["system[0]", "system[1]"]
    canonical = CanonicalRenderer(tokenizer).render(request)
    assert [s.slot for s in canonical.segments if s.kind == "system" and s.slot] == ["system[0]", "system[1]"]


def test_only_a_template_that_reads_tools_gets_them(cl100k: TiktokenTokenizer) -> None:
    mentions = "{# tools are not supported #}{% for m in messages %}{{ m.content }}{% endfor %}"
    assert not JinjaRenderer(cl100k, ChatTemplate(mentions, origin="t")).uses_tools
    reads = "{% if tools %}{{ tools | tojson(indent=2) }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"
    renderer = JinjaRenderer(cl100k, ChatTemplate(reads, origin="t"))
    assert renderer.uses_tools
    r = renderer.render(make_request(slots=()))
    assert r.notices == ()
    assert '"name": "memory"' in _text(cl100k, r.ids())


def test_jinja_accepts_a_template_of_our_own_that_embeds_tools(cl100k: TiktokenTokenizer) -> None:
    source = (
        "{% if tools %}<tools>{{ tools | tojson }}</tools>\n{% endif %}"
        "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant] {% endif %}"
    )
    r = JinjaRenderer(cl100k, ChatTemplate(source, origin="test")).render(make_request())
    first = r.segments[0]
    assert first.kind == "tools"
    assert _text(cl100k, r.ids()[first.start : first.end]).startswith("<tools>[{")
    assert [s.index for s in r.segments if s.kind == "message"] == [0, 1, 2]


def test_gguf_tokenizer_reads_special_tokens_as_single_ids() -> None:
    pytest.importorskip("llama_cpp")
    tok = load_meter_tokenizer("gguf")
    assert tok.name == "gguf"
    assert tok.encode("<|im_start|>user") == [1, 4093]


def test_jinja_merges_turns_a_template_rewrites_and_says_so(cl100k: TiktokenTokenizer) -> None:
    # This template renders the last message differently, so no shorter conversation is a
    # prefix of the full render: every boundary after the system prompt is unknown.
    source = (
        "{% if messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}"
        "{% for m in messages %}{% if loop.last %}{{ m.content | upper }}"
        "{% else %}{{ m.content }}{% endif %}\n{% endfor %}"
    )
    request = make_request(tools=(), messages=(MeterMessage("user", "one"), MeterMessage("user", "two")))
    r = JinjaRenderer(cl100k, ChatTemplate(source, origin="test")).render(request)
    assert _text(cl100k, r.ids()) == SYSTEM + "oneTWO"  # trim_blocks eats the newline after a tag
    assert any("messages 0..1 share one segment with the system prompt" in w for w in r.warnings)
    assert [(s.kind, s.start, s.end) for s in r.segments] == [("system", 0, r.n_tokens)]


def test_the_gguf_tokenizer_loads_without_a_word_on_stderr() -> None:
    pytest.importorskip("llama_cpp")
    child = "from harness.cachemeter import load_meter_tokenizer; print(load_meter_tokenizer('gguf').encode('hi'))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, check=True)
    assert out.stderr == ""  # once: "possible training context overflow", from a needless context
    assert out.stdout.strip().startswith("[")


def test_keel_traces_count_exactly_what_the_template_renders(
    keel_traces: dict[str, Path], cl100k: TiktokenTokenizer
) -> None:
    # Slot edges sit inside whitespace runs ("...adding.\n\n" | "MEMORY"): cutting the text
    # there would tokenize them unlike a server that sees the whole prompt.
    source = template_from_gguf(smollm2_gguf_path()).source
    renderer = JinjaRenderer(cl100k, ChatTemplate(source, origin="smollm2"))
    requests = list(read_requests(keel_traces["live"]))
    for request in requests:
        raw = [{"role": "system", "content": request.system}] if request.system else []
        raw += [{"role": m.role, "content": m.content} for m in request.messages]
        assert renderer.render(request).n_tokens == cl100k.count(_plain_render(source, raw)), request.line
    assert any(len(r.slots) > 1 for r in requests)
