"""Script steps from the plain-data form scenario YAML files use."""

from __future__ import annotations

import pytest
import yaml
from pydantic import JsonValue

from harness.errors import ConfigError, ModelRateLimitError, ModelServerError
from harness.models._script_data import step_from_data, steps_from_data
from harness.models.scripted import RaiseStep, ReplyStep, ScriptedModel
from harness.types import Message, ModelRequest, ToolCall, Usage

SCENARIO = """
replies:
  - "Hello!"
  - say: Noted.
    usage: {input: 120, output: 8, cache_read: 100}
  - tool_calls:
      - {name: memory, arguments: {action: add, target: user, content: likes tea}}
      - {name: session_search, arguments: '{"query": "broken', id: s1}
    say: Saving and searching.
  - error: rate_limit
    retry_after: 2
  - error: server
"""


async def test_a_yaml_script_becomes_the_steps_it_describes() -> None:
    data = yaml.safe_load(SCENARIO)
    steps = steps_from_data(data["replies"], where="scenario.replies")
    assert steps[0] == ReplyStep(text="Hello!")
    assert steps[1] == ReplyStep(text="Noted.", usage=Usage(input=120, output=8, cache_read=100))
    assert steps[2] == ReplyStep(
        text="Saving and searching.",
        tool_calls=(
            ToolCall("", "memory", '{"action": "add", "target": "user", "content": "likes tea"}'),
            ToolCall("s1", "session_search", '{"query": "broken'),
        ),
    )
    assert isinstance(steps[3], RaiseStep)
    assert isinstance(steps[3].error, ModelRateLimitError)
    assert steps[3].error.retry_after == 2.0
    assert isinstance(steps[4], RaiseStep)
    assert isinstance(steps[4].error, ModelServerError)

    model = ScriptedModel(steps)
    req = ModelRequest(system="s", messages=(Message(role="user", content="hi"),))
    await model.complete(req)
    await model.complete(req)
    reply = await model.complete(req)
    assert [c.id for c in reply.message.tool_calls] == ["call_1", "s1"]


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ({}, "needs `say`, `tool_calls` or `error`"),
        ({"say": "x", "error": "server"}, "cannot also have"),
        ({"error": "meltdown"}, "error"),
        ({"say": "x", "retry_after": 3}, "belong to `error` steps"),
        ({"error": "timeout", "retry_after": 3}, "rate_limit` and `server` errors only"),
        ({"tool_calls": [{"arguments": {}}]}, r"tool_calls\.0\.name"),
        ({"sey": "typo"}, "sey"),
        (3, "script\\[0\\]"),
    ],
)
def test_bad_steps_are_config_errors_naming_the_position_and_problem(item: JsonValue, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        steps_from_data([item])
    assert "script[0]" in str(info.value)


def test_a_script_that_is_not_a_list_is_rejected() -> None:
    with pytest.raises(ConfigError, match="must be a list of steps, got dict"):
        steps_from_data({"say": "x"})


def test_a_bare_string_is_a_say_step() -> None:
    assert step_from_data("hi") == ReplyStep(text="hi")
