"""The tool registry turns every kind of bad call into a result the model can read."""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel, Field

from harness.tools import FunctionTool, RawTool, ToolOutput, ToolRegistry
from harness.types import ToolCall, ToolSpec


class EchoArgs(BaseModel):
    text: str = Field(min_length=1)
    times: int = 1


async def _echo(args: EchoArgs) -> str:
    return args.text * args.times


def _registry(**kw: float) -> ToolRegistry:
    reg = ToolRegistry(**kw)
    reg.add(FunctionTool("echo", "Repeat text.", EchoArgs, _echo))
    return reg


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

    reg = ToolRegistry()
    reg.add(RawTool(ToolSpec("boom", "Explodes."), boom))
    res, _ = await reg.run(ToolCall("1", "boom", "{}"))
    assert res.is_error and "disk on fire" in res.content


async def test_a_slow_tool_times_out_into_an_error_result() -> None:
    async def slow(_: str) -> ToolOutput:
        await anyio.sleep(30)
        return ToolOutput("never")

    reg = ToolRegistry(timeout_s=0.05)
    reg.add(RawTool(ToolSpec("slow", "Sleeps."), slow))
    res, _ = await reg.run(ToolCall("1", "slow", "{}"))
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

    reg = ToolRegistry()
    reg.add(RawTool(ToolSpec("leaky", "Leaks."), leaky))
    res, _ = await reg.run(ToolCall("1", "leaky", "{}"))
    assert "memory-context" not in res.content


def test_duplicate_names_are_refused() -> None:
    reg = _registry()
    with pytest.raises(ValueError, match="already registered"):
        reg.add(FunctionTool("echo", "again", EchoArgs, _echo))
