"""`harness.tools.functions`: a typed Python function as a tool the model can call."""

from __future__ import annotations

import json
import threading
import time
from typing import Annotated

import anyio
import anyio.lowlevel
import pytest
from pydantic import Field

from harness.errors import ConfigError
from harness.tools.cut import cap_text
from harness.tools.functions import import_tool, python_tool, tool


def search_tickets(
    query: Annotated[str, Field(description="words to look for")], limit: int = 5, closed: bool = False
) -> str:
    """Search the ticket tracker.

    Args:
        query: ignored here; the Annotated description wins.
    """
    return f"{query}:{limit}:{closed}"


def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    t = python_tool(search_tickets)
    assert t.spec.name == "search_tickets"
    assert t.spec.description == "Search the ticket tracker."
    params = t.spec.parameters
    assert params["required"] == ["query"]
    assert params["properties"] == {
        "query": {"type": "string", "description": "words to look for"},
        "limit": {"type": "integer", "default": 5},
        "closed": {"type": "boolean", "default": False},
    }


async def test_valid_arguments_reach_the_function() -> None:
    out = await python_tool(search_tickets)('{"query": "login", "limit": 2}')
    assert (out.content, out.is_error) == ("login:2:False", False)


async def test_invalid_arguments_are_a_tool_error_and_the_function_is_not_called() -> None:
    calls: list[int] = []

    def count(n: int) -> str:
        """Count."""
        calls.append(n)
        return str(n)

    t = python_tool(count)
    bad_type = await t('{"n": "many"}')
    missing = await t("{}")
    extra = await t('{"n": 1, "m": 2}')
    not_json = await t("{n: 1")
    for out in (bad_type, missing, extra, not_json):
        assert out.is_error
        assert json.loads(out.content)["success"] is False
    assert "n:" in json.loads(bad_type.content)["error"]
    assert calls == []


async def test_a_sync_tool_runs_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def where() -> str:
        """Where am I?"""
        seen.append(threading.get_ident())
        return "ok"

    out = await python_tool(where)("{}")
    assert out.content == "ok"
    assert seen and seen[0] != loop_thread


async def test_an_async_tool_is_awaited() -> None:
    async def later(x: int) -> dict[str, int]:
        """Double it."""
        await anyio.lowlevel.checkpoint()
        return {"x": x * 2}

    out = await python_tool(later)('{"x": 21}')
    assert json.loads(out.content) == {"x": 42}


async def test_a_tool_past_its_timeout_is_a_tool_error() -> None:
    @tool(timeout_s=0.05)
    def slow() -> str:
        """Sleep."""
        time.sleep(2)
        return "never"

    @tool(timeout_s=0.05)
    async def slow_async() -> str:
        """Sleep."""
        await anyio.sleep(30)
        return "never"

    for fn in (slow, slow_async):
        out = await python_tool(fn)("{}")
        assert out.is_error
        assert "timed out after 0.05 s" in json.loads(out.content)["error"]


async def test_the_decorator_overrides_name_description_and_output_cap() -> None:
    @tool(name="big", description="Returns a lot.", max_output_chars=100)
    def produce() -> str:
        return "x" * 10_000

    t = python_tool(produce)
    assert (t.spec.name, t.spec.description) == ("big", "Returns a lot.")
    out = await t("{}")
    assert len(out.content) < 200
    assert "10,000" in out.content and "cut" in out.content


def test_cap_text_keeps_head_and_tail_and_says_what_went() -> None:
    text = "HEAD" + "m" * 1000 + "TAIL"
    capped = cap_text(text, 100)
    assert capped.startswith("HEAD") and capped.endswith("TAIL")
    assert "cut" in capped
    assert cap_text("short", 100) == "short"


def _untyped(x) -> str:  # type: ignore[no-untyped-def]  # the case under test
    return str(x)


def _star(*names: str) -> str:
    return ",".join(names)


def _no_schema(handle: threading.Thread) -> str:
    return str(handle)


@tool(name="bad name!")
def _bad_name() -> str:
    return ""


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (_untyped, "has no type annotation"),
        (_star, r"\*names is not supported"),
        (_no_schema, "cannot be validated"),
        (_bad_name, "is not allowed"),
    ],
)
def test_a_function_that_cannot_be_a_tool_is_refused_with_the_reason(fn: object, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        python_tool(fn)  # type: ignore[arg-type]  # deliberately wrong inputs


def test_import_tool_finds_a_function_by_path_and_names_what_is_missing() -> None:
    assert import_tool("json:dumps") is json.dumps
    with pytest.raises(ConfigError, match="must look like"):
        import_tool("json.dumps")
    with pytest.raises(ConfigError, match="cannot be imported"):
        import_tool("no_such_module_here:f")
    with pytest.raises(ConfigError, match="has no function 'nope'"):
        import_tool("json:nope")
