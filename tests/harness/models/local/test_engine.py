"""The embedded model's engine over a character-level fake model: the request rules it
enforces (max_tokens, tool_choice, context room) and the counts it reports."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence

import pytest
from pydantic import JsonValue

from harness.modelfiles import ChatTemplate, TemplateRenderer
from harness.models.local._disk import DiskPrefixCache
from harness.models.local._engine import PREFILL_CHUNK, Engine, RequestError
from harness.models.local._prefix import PrefixPolicy, common_prefix

CHATML = (
    "{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] + '\\n' }}{% endfor %}"
    "{% if tools %}{{ '[tools:' + tools|length|string + ']' }}{% endif %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}{# tool_call #}"
)
EOS = 0
BAN = 1


class CharLlm:
    """One token per character (its code point); token 0 is end-of-text."""

    def __init__(self, n_ctx: int = 400) -> None:
        self._n_ctx = n_ctx
        self.state: list[int] = []
        self.evaluated = 0
        """Prompt tokens evaluated so far (what a real model spends time on)."""

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [ord(c) for c in text.decode("utf-8")]

    def detokenize(
        self, tokens: list[int], prev_tokens: list[int] | None = None, special: bool = False
    ) -> bytes:
        return "".join(chr(t) for t in tokens).encode("utf-8")

    def n_ctx(self) -> int:
        return self._n_ctx

    def token_eos(self) -> int:
        return EOS


class Script:
    """A sampler that 'generates' a fixed text, recording what it was asked."""

    def __init__(self, llm: CharLlm, text: str) -> None:
        self.llm, self.text = llm, text
        self.calls: list[tuple[float, dict[str, JsonValue] | None, list[int]]] = []

    def __call__(
        self, tokens: list[int], temperature: float, schema: dict[str, JsonValue] | None, banned: list[int]
    ) -> Iterator[int]:
        self.calls.append((temperature, schema, banned))
        self.llm.evaluated += len(tokens) - min(common_prefix(self.llm.state, tokens), len(tokens) - 1)
        self.llm.state = list(tokens)
        for c in self.text:
            yield ord(c)
            self.llm.state.append(ord(c))
        yield EOS


class CharKv:
    """The fake model's live state; a snapshot is its token list."""

    def __init__(self, llm: CharLlm) -> None:
        self.llm = llm

    def tokens(self) -> list[int]:
        return list(self.llm.state)

    def snapshot(self) -> bytes:
        return json.dumps(self.llm.state).encode()

    def restore(self, data: bytes, tokens: Sequence[int]) -> bool:
        self.llm.state = json.loads(data)
        return self.llm.state == list(tokens)

    def advance(self, tokens: Sequence[int]) -> None:
        self.llm.evaluated += len(tokens) - common_prefix(self.llm.state, tokens)
        self.llm.state = list(tokens)

    def reset(self) -> None:
        self.llm.state = []


def _engine(
    text: str,
    *,
    cap: int = 100,
    n_ctx: int = 400,
    policy: PrefixPolicy | None = None,
    disk: DiskPrefixCache | None = None,
) -> tuple[Engine, Script, CharLlm]:
    llm = CharLlm(n_ctx)
    script = Script(llm, text)
    engine = Engine(
        llm,
        TemplateRenderer(ChatTemplate(CHATML)),
        name="fake",
        max_tokens_cap=cap,
        sample=script,
        kv=CharKv(llm),
        stop_ids=frozenset({EOS}),
        banned_ids=(BAN,),
        policy=policy or PrefixPolicy(),
        disk=disk,
    )
    return engine, script, llm


TOOL: dict[str, JsonValue] = {
    "type": "function",
    "function": {
        "name": "memory",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
    },
}


def _body(**extra: JsonValue) -> dict[str, JsonValue]:
    return {"messages": [{"role": "user", "content": "hi"}], **extra}


def test_max_tokens_is_honoured_even_with_tools_offered() -> None:
    engine, _, _ = _engine("a long answer that goes on and on")
    req = engine.prepare(_body(tools=[TOOL], tool_choice="auto", max_tokens=5))
    gen = engine.generate(req, lambda _: None, threading.Event())
    assert gen.text == "a lon" and gen.completion_tokens == 5 and gen.finish == "length"


def test_the_server_cap_and_the_context_room_bound_max_tokens() -> None:
    engine, _, _ = _engine("x", cap=7, n_ctx=40)
    assert engine.prepare(_body(max_tokens=1000)).max_tokens == 7
    small, _, _ = _engine("x", cap=100, n_ctx=30)
    req = small.prepare(_body())
    assert req.max_tokens == 30 - len(req.tokens)


def test_a_prompt_longer_than_the_context_is_a_clear_request_error() -> None:
    engine, _, _ = _engine("x", n_ctx=10)
    with pytest.raises(RequestError, match=r"context window is 10.*model.context_window"):
        engine.prepare(_body())


def test_forcing_a_named_tool_opens_a_call_and_constrains_it_to_that_tools_schema() -> None:
    engine, script, _ = _engine('{"content": "x"}')
    req = engine.prepare(
        _body(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "memory"}})
    )
    assert req.mode == "forced" and req.prompt.endswith("<|assistant|>")
    assert "".join(chr(t) for t in req.tokens).endswith(
        '<|assistant|><tool_call>\n{"name": "memory", "arguments": '
    )
    engine.generate(req, lambda _: None, threading.Event())
    assert script.calls[0][1] == {"type": "object", "properties": {"content": {"type": "string"}}}


def test_required_offers_every_tool_and_an_unknown_name_is_refused() -> None:
    other: dict[str, JsonValue] = {"type": "function", "function": {"name": "search"}}
    engine, _, _ = _engine("x")
    req = engine.prepare(_body(tools=[TOOL, other], tool_choice="required"))
    assert req.schema is not None and len(req.schema["anyOf"]) == 2  # type: ignore[arg-type]  # a list
    with pytest.raises(RequestError, match="names no offered tool"):
        engine.prepare(_body(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "nope"}}))


def test_tool_choice_none_keeps_the_tools_in_the_prompt_and_bans_the_call_token() -> None:
    engine, script, _ = _engine("plain")
    with_tools = engine.prepare(_body(tools=[TOOL], tool_choice="none"))
    assert "[tools:1]" in with_tools.prompt, "the prefix stays the same as with tool_choice auto"
    engine.generate(with_tools, lambda _: None, threading.Event())
    auto = engine.prepare(_body(tools=[TOOL]))
    engine.generate(auto, lambda _: None, threading.Event())
    assert [c[2] for c in script.calls] == [[BAN], []]


def test_usage_counts_the_prefix_the_model_already_holds() -> None:
    engine, _, _ = _engine("ok")
    first = engine.prepare(_body())
    g1 = engine.generate(first, lambda _: None, threading.Event())
    assert g1.cached_tokens == 0 and g1.prompt_tokens == len(first.tokens)
    second = engine.prepare(
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "more"},
            ]
        }
    )
    g2 = engine.generate(second, lambda _: None, threading.Event())
    shared = len("<|user|>hi\n<|assistant|>ok")
    assert g2.cached_tokens == shared


def test_generation_stops_at_the_next_token_once_cancelled() -> None:
    engine, _, _ = _engine("abcdefghij")
    cancelled = threading.Event()
    seen: list[str] = []

    def on_text(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 3:
            cancelled.set()

    gen = engine.generate(engine.prepare(_body()), on_text, cancelled)
    assert gen.text == "abc" and gen.finish == "cancelled"


def test_prefill_is_reported_chunk_by_chunk_and_evaluates_each_token_once() -> None:
    engine, _, llm = _engine("ok", n_ctx=4000)
    long = _body(messages=[{"role": "user", "content": "x" * (2 * PREFILL_CHUNK + 50)}])
    req = engine.prepare(long)
    seen: list[tuple[int, int]] = []
    gen = engine.generate(
        req, lambda _: None, threading.Event(), lambda done, total: seen.append((done, total))
    )
    n = len(req.tokens)
    assert gen.text == "ok" and gen.cached_tokens == 0
    assert seen == [(0, n), (PREFILL_CHUNK, n), (2 * PREFILL_CHUNK, n), (n - 1, n)]
    assert llm.evaluated == n  # the chunks plus the last token sampling evaluates: no token twice


def test_a_request_cancelled_during_prefill_stops_before_sampling() -> None:
    engine, script, llm = _engine("ok", n_ctx=4000)
    req = engine.prepare(_body(messages=[{"role": "user", "content": "x" * (3 * PREFILL_CHUNK)}]))
    cancelled = threading.Event()

    def progress(done: int, _total: int) -> None:
        if done >= PREFILL_CHUNK:
            cancelled.set()

    gen = engine.generate(req, lambda _: None, cancelled, progress)
    assert gen.finish == "cancelled" and gen.text == "" and script.calls == []
    assert llm.evaluated == PREFILL_CHUNK


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": []}, "non-empty list"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": "memory"}, "list of tool objects"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
            "needs a function",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}, "at least one tool"),
    ],
)
def test_malformed_requests_are_request_errors(body: dict[str, JsonValue], message: str) -> None:
    engine, _, _ = _engine("x")
    with pytest.raises(RequestError, match=message):
        engine.prepare(body)
