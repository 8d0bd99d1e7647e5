"""The user's own Python functions as tools: schema from the signature, validation at the boundary.

```python
from typing import Annotated
from pydantic import Field
import harness

@harness.tool(timeout_s=10)
def search_tickets(query: Annotated[str, Field(description="words to look for")], limit: int = 5) -> str:
    \"\"\"Search the ticket tracker.\"\"\"
    ...

async with harness.open_session(config, tools=[search_tickets]) as session:
    ...
```

The name is the function's (or the decorator's `name`), the description its docstring up
to an `Args:` section, and the parameters a JSON schema that pydantic builds from the
signature (`Annotated[..., Field(description=...)]` documents one). The model's arguments
are validated before the call; what fails validation is returned to the model as a tool
error and the session goes on. Where a function runs is `workers.py`: a sync one on a daemon
thread, an async one on the tool loop, never on the session's event loop; each call is bounded
by the tool's timeout (a function that does not stop is abandoned) and its text by the output
cap. Anything it raises, `SystemExit` included, is a tool error; an async function that
blocks its loop is reported with a warning.

A function that cannot be a tool (no type annotation, `*args`, a type with no JSON schema,
a bad name) is refused when the session opens, with a `ConfigError` that says why.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.errors import PydanticUserError

from harness.errors import ConfigError
from harness.events import Event, Warning
from harness.tools.cut import cap_text
from harness.tools.registry import FunctionTool, ToolOutput, error_json
from harness.tools.workers import BLOCKED_S, run_async, run_sync

__all__ = ["PythonTool", "ToolFunction", "import_tool", "python_tool", "python_tools", "tool"]

ToolFunction = Callable[..., object]
"""A plain function, sync or async, whose parameters are all annotated."""

F = TypeVar("F", bound=ToolFunction)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OPTIONS_ATTR = "__keel_tool__"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Options:
    name: str | None
    description: str | None
    timeout_s: float | None
    max_output_chars: int | None


def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
    max_output_chars: int | None = None,
) -> Callable[[F], F]:
    """Mark a function as a tool with overrides; the function itself is returned unchanged.

    Args:
        name: the tool's name (default: the function's).
        description: what the model reads (default: the docstring).
        timeout_s: the longest one call may take (default: `limits.tool_timeout_s`).
        max_output_chars: the longest result text kept (default: `limits.tool_output_chars`).
    """

    def mark(fn: F) -> F:
        setattr(fn, _OPTIONS_ATTR, _Options(name, description, timeout_s, max_output_chars))
        return fn

    return mark


def _description(fn: ToolFunction) -> str:
    doc = inspect.getdoc(fn) or ""
    cut = re.split(r"^\s*(Args|Arguments|Parameters|Returns|Raises):\s*$", doc, maxsplit=1, flags=re.M)[0]
    return cut.strip()


def _arguments_model(fn: ToolFunction, name: str) -> type[BaseModel]:
    """A pydantic model of the function's parameters; ConfigError for a signature that cannot be one."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # an annotation that does not resolve (a typo, a missing import)
        raise ConfigError(f"tool {name!r}: its type annotations do not resolve ({exc})") from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(f"tool {name!r}: *{param.name} is not supported; name each parameter")
        if param.kind is param.POSITIONAL_ONLY:
            raise ConfigError(
                f"tool {name!r}: parameter {param.name!r} is positional-only; tools take keywords"
            )
        if param.name not in hints:
            raise ConfigError(f"tool {name!r}: parameter {param.name!r} has no type annotation; add one")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], default)
    try:
        return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    except (PydanticUserError, TypeError) as exc:
        raise ConfigError(f"tool {name!r}: its parameters cannot be validated ({exc})") from exc


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class PythonTool(FunctionTool[BaseModel]):
    """A Python function as a `Tool` (`harness.tools.registry`): its arguments validated like
    every `FunctionTool`'s, then the function run in a worker with a timeout."""

    def __init__(self, fn: ToolFunction, *, timeout_s: float, max_output_chars: int) -> None:
        options: _Options = getattr(fn, _OPTIONS_ATTR, _Options(None, None, None, None))
        name: str = options.name or str(getattr(fn, "__name__", ""))
        if not _NAME.match(name):
            raise ConfigError(f"tool name {name!r} is not allowed; use 1-64 letters, digits, '_' or '-'")
        try:
            super().__init__(
                name, options.description or _description(fn), _arguments_model(fn, name), self._run
            )
        except PydanticUserError as exc:
            raise ConfigError(
                f"tool {name!r}: a parameter type has no JSON schema ({exc}); use plain types"
            ) from exc
        self._function = fn
        # the same function, kept with its coroutine type where it is one
        self._async_fn = fn if inspect.iscoroutinefunction(fn) else None
        self.timeout_s = options.timeout_s or timeout_s
        self.max_output_chars = options.max_output_chars or max_output_chars

    async def _run(self, args: BaseModel) -> ToolOutput:
        kwargs = {field: getattr(args, field) for field in type(args).model_fields}
        name = self.spec.name
        if self._async_fn is not None:
            outcome = await run_async(partial(self._async_fn, **kwargs), timeout_s=self.timeout_s)
        else:
            outcome = await run_sync(partial(self._function, **kwargs), name=name, timeout_s=self.timeout_s)
        if outcome.timed_out:
            return ToolOutput(error_json(f"tool {name!r} timed out after {self.timeout_s:g} s"), True)
        events = _blocked(name, outcome.blocked_s)
        if outcome.error is not None:
            log.warning("tool %r failed", name, exc_info=outcome.error)
            return ToolOutput(error_json(f"tool {name!r} failed: {_describe(outcome.error)}"), True, events)
        return ToolOutput(cap_text(_as_text(outcome.value), self.max_output_chars), events=events)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called exit({exc.code!r}) (SystemExit); the session goes on"
    return f"{type(exc).__name__}: {exc}"


def _blocked(name: str, seconds: float) -> tuple[Event, ...]:
    """A warning when an async tool stalled its event loop (a blocking call inside it)."""
    if seconds < BLOCKED_S:
        return ()
    message = (
        f"tool {name!r} blocked its event loop for {seconds:.1f} s (a blocking call such as time.sleep "
        "inside an async function); make it a plain def (it runs on a thread) or use anyio.to_thread.run_sync"
    )
    log.warning("%s", message)
    return (Warning(message),)


def python_tool(fn: ToolFunction, *, timeout_s: float = 60.0, max_output_chars: int = 200_000) -> PythonTool:
    """`fn` as a tool (see the module docstring); defaults apply where the decorator set none.

    Raises:
        ConfigError: the function cannot be a tool; the message says why.
    """
    return PythonTool(fn, timeout_s=timeout_s, max_output_chars=max_output_chars)


def import_tool(path: str) -> ToolFunction:
    """The function a config names as `package.module:function` (blocking: imports a module).

    Raises:
        ConfigError: the module or the attribute is missing, or it is not callable.
    """
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"tools entry {path!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"tools entry {path!r}: module {module_name!r} cannot be imported ({exc})") from exc
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise ConfigError(f"tools entry {path!r}: {module_name!r} has no function {attr!r}")
    return typing.cast(ToolFunction, fn)


def python_tools(
    functions: Sequence[ToolFunction], *, timeout_s: float, max_output_chars: int
) -> list[PythonTool]:
    """Several functions as tools, in order."""
    return [python_tool(fn, timeout_s=timeout_s, max_output_chars=max_output_chars) for fn in functions]
