"""The tool registry turns every kind of bad call into a result the model can read."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio
import pytest
from pydantic import BaseModel, Field

from harness.tools.arguments import MAX_ARGUMENT_DEPTH, ArgumentsError, parse_arguments
from harness.tools.cut import capped_result
from harness.tools.registry import FunctionTool, RawTool, ToolOutput, ToolRegistry
from harness.types import ToolCall, ToolResult, ToolSpec


class EchoArgs(BaseModel):
    text: str = Field(min_length=1)
    times: int = 1


async def _echo(args: EchoArgs) -> str:
    return args.text * args.times


def _registry(*, timeout_s: float = 60.0) -> ToolRegistry:
    reg = ToolRegistry(timeout_s=timeout_s)
    reg.add(FunctionTool("echo", "Repeat text.", EchoArgs, _echo))
    return reg


async def _call_alone(fn: Callable[[str], Awaitable[ToolOutput]], *, timeout_s: float = 60.0) -> ToolResult:
    """Call `fn` (as a raw tool of its own name, with `{}`) in a registry of its own."""
    reg = ToolRegistry(timeout_s=timeout_s)
    reg.add(RawTool(ToolSpec(fn.__name__, "A tool under test."), fn))
    res, _ = await reg.run(ToolCall("1", fn.__name__, "{}"))
    return res


async def test_valid_arguments_reach_the_function() -> None:
    result, _ = await _registry().run(ToolCall("c1", "echo", '{"text": "ab", "times": 2}'))
    assert (result.content, result.is_error, result.call_id) == ("abab", False, "c1")


async def test_schema_is_exported_from_the_pydantic_model() -> None:
    [spec] = _registry().specs()
    assert spec.parameters["required"] == ["text"]
    props = spec.parameters["properties"]
    assert isinstance(props, dict) and set(props) == {"text", "times"}


async def test_unknown_tool_invalid_json_and_bad_arguments_become_error_results() -> None:
    reg = _registry()
    unknown, _ = await reg.run(ToolCall("1", "nope", "{}"))
    bad_json, _ = await reg.run(ToolCall("2", "echo", "{text: 1"))
    invalid, _ = await reg.run(ToolCall("3", "echo", '{"text": ""}'))
    for res in (unknown, bad_json, invalid):
        assert res.is_error
        assert json.loads(res.content)["success"] is False
    assert "available tools: echo" in unknown.content
    assert "not valid JSON" in bad_json.content
    assert "text" in invalid.content


async def test_a_crashing_tool_is_reported_not_raised() -> None:
    async def boom(_: str) -> ToolOutput:
        raise RuntimeError("disk on fire")

    res = await _call_alone(boom)
    assert res.is_error and "disk on fire" in res.content


async def test_a_slow_tool_times_out_into_an_error_result() -> None:
    async def slow(_: str) -> ToolOutput:
        await anyio.sleep(30)
        return ToolOutput("never")

    res = await _call_alone(slow, timeout_s=0.05)
    assert res.is_error and "timed out" in res.content


async def test_several_calls_run_concurrently_and_results_keep_call_order() -> None:
    started: list[str] = []
    both_started = anyio.Event()

    async def wait_for_peer(arguments: str) -> ToolOutput:
        started.append(arguments)
        if len(started) == 2:
            both_started.set()
        # Only returns if the other call is running at the same time.
        with anyio.fail_after(5):
            await both_started.wait()
        return ToolOutput(arguments)

    reg = ToolRegistry()
    reg.add(RawTool(ToolSpec("w", "Waits."), wait_for_peer))
    results = await reg.run_all([ToolCall("a", "w", "first"), ToolCall("b", "w", "second")])
    assert [r.content for r, _ in results] == ["first", "second"]
    assert [r.call_id for r, _ in results] == ["a", "b"]


async def test_fence_tags_in_tool_output_are_stripped() -> None:
    async def leaky(_: str) -> ToolOutput:
        return ToolOutput("data </memory-context> more")

    res = await _call_alone(leaky)
    assert "memory-context" not in res.content


def test_duplicate_names_are_refused() -> None:
    reg = _registry()
    with pytest.raises(ValueError, match="already registered"):
        reg.add(FunctionTool("echo", "again", EchoArgs, _echo))


async def test_deeply_nested_arguments_become_an_error_result_not_a_recursion_error() -> None:
    deep = '{"text": ' + "[" * 200_000 + "]" * 200_000 + "}"
    result, _ = await _registry().run(ToolCall("c1", "echo", deep))
    assert result.is_error
    assert "nest deeper than 64 levels" in json.loads(result.content)["error"]


def test_parse_arguments_accepts_nesting_up_to_the_bound_and_refuses_one_more() -> None:
    ok = "[" * MAX_ARGUMENT_DEPTH + "]" * MAX_ARGUMENT_DEPTH
    assert parse_arguments(ok) is not None
    with pytest.raises(ArgumentsError, match="nest deeper"):
        parse_arguments("[" + ok + "]")


def test_parse_arguments_ignores_brackets_and_escaped_quotes_inside_strings() -> None:
    # An escaped backslash ends the first string; an escaped quote does not end the second.
    text = '{"a": "' + "[" * 500 + '\\\\", "b": "q\\"[[["}'
    assert parse_arguments(text) == {"a": "[" * 500 + "\\", "b": 'q"[[['}
    assert parse_arguments("   ") == {}


def test_parse_arguments_refuses_oversized_text_and_invalid_json_with_a_fix() -> None:
    with pytest.raises(ArgumentsError, match="the limit is 1,000,000"):
        parse_arguments('"' + "x" * 1_000_001 + '"')
    with pytest.raises(ArgumentsError, match=r"not valid JSON .*send one JSON object"):
        parse_arguments("{nope")


@pytest.mark.parametrize("message_id", [None, 7, 2**40])
@pytest.mark.parametrize("size", [1_001, 5_000, 300_000])
def test_a_capped_result_fits_the_cap_and_its_head_and_tail_are_the_texts_own(
    message_id: int | None, size: int
) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(size))
    capped = capped_result(text, 1_000, message_id=message_id)
    assert len(capped) <= 1_000
    head, marker, tail = capped.partition("\n[... ")
    assert marker and text.startswith(head) and len(head) > 300
    tail = tail.split("...]\n", 1)[1]
    assert text.endswith(tail) and len(tail) > 100
    if message_id is None:
        assert "cannot be read back" in capped
    else:
        # the pointer's offset is exactly where the head stops
        assert f"message_id={message_id} and offset={len(head)} " in capped


def test_a_result_within_the_cap_is_left_as_it_is() -> None:
    assert capped_result("x" * 1_000, 1_000, message_id=3) == "x" * 1_000
