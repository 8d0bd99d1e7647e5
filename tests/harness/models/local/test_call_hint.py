"""The call hint: on the user's turn, a reply is made a call to the tool the model names
confidently when asked to name one, its arguments under that tool's schema; otherwise the
reply is generated as usual. Over the character-level fake model (a name's first token is
its first character) with scripted next-token odds."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import replace

import httpx
from pydantic import JsonValue

from harness.models.factory import local_client
from harness.models.local._engine import Engine
from harness.models.local._server import build_app
from harness.types import Message, ModelRequest, ToolSpec
from tests.harness.models.local.test_engine import TOOL, CharLlm, Script, _engine
from tests.harness.models.recorder import stream_all

PARAMS: dict[str, JsonValue] = {"type": "object", "properties": {"content": {"type": "string"}}}  # TOOL's
ARGS = '{"name": "memory", "arguments": {"content": "Uses neovim"}}'
WEATHER: dict[str, JsonValue] = {
    "type": "function",
    "function": {
        "name": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def _prj(name: str) -> dict[str, JsonValue]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


class Odds:
    """Next-token odds by first character; records the live state each time it is asked."""

    def __init__(self, llm: CharLlm, odds: dict[str, float]) -> None:
        self.llm, self.odds = llm, odds
        self.asked: list[str] = []

    def __call__(self, ids: Sequence[int]) -> list[float]:
        self.asked.append("".join(chr(t) for t in self.llm.state))
        return [self.odds.get(chr(i), 0.0) for i in ids]


def _hinted(text: str, odds: dict[str, float], confidence: float | None = 0.8) -> tuple[Engine, Script, Odds]:
    engine, script, llm = _engine(text, cap=200, n_ctx=4000)
    ask = Odds(llm, odds)
    return replace(engine, call_confidence=confidence, next_probs=ask), script, ask


def _body(
    *tools: dict[str, JsonValue], called: tuple[str, ...] = (), **extra: JsonValue
) -> dict[str, JsonValue]:
    """The user's message, then one call and its result for each name in `called`."""
    messages: list[JsonValue] = [{"role": "user", "content": "I use neovim"}]
    for n, name in enumerate(called):
        call: JsonValue = {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "no matches"},
        ]
    return {"messages": messages, "tools": list(tools), **extra}


def test_a_tool_named_confidently_makes_the_reply_that_call_under_its_schema() -> None:
    engine, script, ask = _hinted(ARGS, {"m": 0.95, "w": 0.01})
    req = engine.prepare(_body(TOOL, WEATHER))
    gen = engine.generate(req, lambda _: None, threading.Event())
    assert gen.hinted and gen.text == "<tool_call>\n" + ARGS
    assert ask.asked == [req.prompt + '<tool_call>\n{"name": "']  # asked right after the call's opening
    ((_, schema, _),) = script.calls
    assert schema == {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": "memory"}, "arguments": PARAMS},
                "required": ["name", "arguments"],
            }
        ]
    }


def test_an_unsure_model_answers_freely_and_the_hint_costs_no_prompt_reread() -> None:
    engine, script, ask = _hinted("Four.", {"m": 0.4, "w": 0.3})
    req = engine.prepare(_body(TOOL, WEATHER))
    gen = engine.generate(req, lambda _: None, threading.Event())
    assert not gen.hinted and gen.text == "Four." and len(ask.asked) == 1
    assert script.calls == [(0.8, None, [])]  # free generation, nothing banned


def test_tools_sharing_a_first_token_are_all_offered_to_the_grammar() -> None:
    engine, script, _ = _hinted('{"name": "proj__read", "arguments": {}}', {"p": 0.9})
    gen = engine.generate(
        engine.prepare(_body(TOOL, _prj("proj__read"), _prj("proj__list"))), lambda _: None, threading.Event()
    )
    assert gen.hinted
    ((_, schema, _),) = script.calls
    assert isinstance(schema, dict) and isinstance(schema["anyOf"], list)
    names = [option["properties"]["name"]["const"] for option in schema["anyOf"]]  # type: ignore[index, call-overload]
    assert names == ["proj__read", "proj__list"]


def test_after_the_first_calls_result_another_tool_may_follow_but_not_the_same_one() -> None:
    engine, script, _ = _hinted('{"name": "proj__list", "arguments": {}}', {"p": 0.9})
    body = _body(_prj("proj__grep"), _prj("proj__list"), called=("proj__grep",))
    gen = engine.generate(engine.prepare(body), lambda _: None, threading.Event())
    assert gen.hinted
    ((_, schema, _),) = script.calls
    assert isinstance(schema, dict) and isinstance(schema["anyOf"], list)
    assert [option["properties"]["name"]["const"] for option in schema["anyOf"]] == ["proj__list"]  # type: ignore[index, call-overload]


def test_the_hint_is_only_for_a_turn_under_auto_with_fewer_than_two_calls_and_when_switched_on() -> None:
    for body, confidence in (
        (_body(TOOL, called=("memory",)), 0.8),  # the tool just called is left out: none remain
        (_body(TOOL, _prj("proj__a"), called=("proj__a", "memory")), 0.8),  # two calls: now words
        (_body(TOOL, tool_choice="none"), 0.8),
        (_body(TOOL, tool_choice="required"), 0.8),
        (_body(), 0.8),  # no tools
        (_body(TOOL), None),  # off
    ):
        engine, _, ask = _hinted("Noted.", {"m": 0.99, "p": 0.99})
        engine = replace(engine, call_confidence=confidence)
        gen = engine.generate(engine.prepare(body), lambda _: None, threading.Event())
        assert not gen.hinted and not ask.asked, body


async def test_through_the_server_a_hinted_reply_streams_no_text_and_arrives_as_a_call() -> None:
    engine, _, _ = _hinted(ARGS, {"m": 0.95})
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=build_app(engine, token="t")),
        base_url="http://local",
        headers={"Authorization": "Bearer t"},
    )
    memory = ToolSpec(
        "memory", "Save a fact.", {"type": "object", "properties": {"content": {"type": "string"}}}
    )
    request = ModelRequest(
        system="You keep notes.", messages=(Message("user", "I use neovim"),), tools=(memory,)
    )
    async with http:
        texts, done = await stream_all(local_client(http, "http://local/v1", "fake", 30), request)
    assert "".join(texts) == ""
    (call,) = done.message.tool_calls
    assert call.name == "memory" and json.loads(call.arguments) == {"content": "Uses neovim"}
    assert done.finish_reason == "tool_calls"
