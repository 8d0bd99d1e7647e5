"""Script steps from plain data, as scenario YAML/JSON files write them.

One item per model call:

    - "plain text reply"                      # shorthand for {say: ...}
    - say: "text"
      usage: {input: 120, output: 8, cache_read: 100}   # optional
    - tool_calls:
        - {name: memory, arguments: {action: add, target: memory, content: "..."}}
        - {name: session_search, arguments: '{"query": "broken json'}   # a string is sent verbatim
      say: "optional text next to the calls"
    - error: server            # connection | timeout | rate_limit | server | auth | request | response
      message: "optional text"
      retry_after: 2           # rate_limit / server only

The file is read from disk, so it is validated here (pydantic, unknown keys rejected) and
a bad step is reported by its position.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from harness.errors import (
    ConfigError,
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    validation_problems,
)
from harness.models.scripted import RaiseStep, ReplyStep, ScriptStep, calls, tool_call
from harness.usage import usage_from_counts

__all__ = ["step_from_data", "steps_from_data"]

ErrorKind = Literal["connection", "timeout", "rate_limit", "server", "auth", "request", "response"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _CallData(_Data):
    name: str = Field(min_length=1)
    arguments: dict[str, JsonValue] | str = Field(default_factory=dict)
    id: str | None = None


class _UsageData(_Data):
    input: int = Field(0, ge=0)
    output: int = Field(0, ge=0)
    cache_read: int = Field(0, ge=0)
    cache_write: int = Field(0, ge=0)
    reasoning: int = Field(0, ge=0)


class _StepData(_Data):
    say: str | None = None
    tool_calls: list[_CallData] | None = None
    usage: _UsageData | None = None
    finish_reason: str | None = None
    error: ErrorKind | None = None
    message: str | None = None
    retry_after: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_kind(self) -> _StepData:
        replies = self.say is not None or self.tool_calls is not None
        if self.error is None and not replies:
            raise ValueError("a step needs `say`, `tool_calls` or `error`")
        if self.error is not None and (replies or self.usage is not None or self.finish_reason is not None):
            raise ValueError(
                "an `error` step cannot also have `say`, `tool_calls`, `usage` or `finish_reason`"
            )
        if self.error is None and (self.message is not None or self.retry_after is not None):
            raise ValueError("`message` and `retry_after` belong to `error` steps")
        if self.retry_after is not None and self.error not in ("rate_limit", "server"):
            raise ValueError("`retry_after` applies to `rate_limit` and `server` errors only")
        return self


def _error(kind: ErrorKind, message: str | None, retry_after: float | None) -> ModelError:
    text = message or f"scripted {kind} error"
    if kind == "rate_limit":
        return ModelRateLimitError(text, retry_after=retry_after)
    if kind == "server":
        return ModelServerError(text, status=500, retry_after=retry_after)
    classes: dict[str, type[ModelError]] = {
        "connection": ModelConnectionError,
        "timeout": ModelTimeoutError,
        "auth": ModelAuthError,
        "request": ModelRequestError,
        "response": ModelResponseError,
    }
    return classes[kind](text)


def step_from_data(item: JsonValue, *, where: str = "step") -> ScriptStep:
    """One step from its data form (see the module docstring).

    Raises:
        ConfigError: The item is not a valid step; the message names `where` and the fix.
    """
    if isinstance(item, str):
        return ReplyStep(text=item)
    try:
        data = _StepData.model_validate(item)
    except ValidationError as exc:
        problems = validation_problems(exc, whole="step")
        raise ConfigError(
            f"{where} is not a valid script step ({problems}); write text, "
            "{say: ...}, {tool_calls: [{name, arguments}]} or {error: server|rate_limit|...}"
        ) from exc
    if data.error is not None:
        return RaiseStep(error=_error(data.error, data.message, data.retry_after))
    usage = usage_from_counts(data.usage.model_dump()) if data.usage is not None else None
    step = calls(
        *(tool_call(c.name, c.arguments, id=c.id or "") for c in data.tool_calls or []),
        text=data.say or "",
        usage=usage,
    )
    return ReplyStep(
        text=step.text, tool_calls=step.tool_calls, usage=step.usage, finish_reason=data.finish_reason
    )


def steps_from_data(items: JsonValue, *, where: str = "script") -> list[ScriptStep]:
    """A whole script from a list of step items (e.g. the `replies:` of a scenario file).

    Raises:
        ConfigError: `items` is not a list, or one of its items is not a valid step.
    """
    if not isinstance(items, list):
        raise ConfigError(f"{where} must be a list of steps, got {type(items).__name__}")
    return [step_from_data(item, where=f"{where}[{i}]") for i, item in enumerate(items)]
