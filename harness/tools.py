"""The tool registry: what the model can call, and how calls become results.

A tool is anything with a `spec` (name, description, JSON schema) and an async
`__call__(arguments: str) -> ToolOutput` that receives the model's raw argument text.
`FunctionTool` validates that text into a pydantic model at the boundary; `RawTool` hands it
to a handler that validates on its own (the memory tool, provider tools).

Nothing a model sends can raise out of the registry: unknown tools, invalid JSON, arguments
that fail validation, a tool that crashes or runs past its timeout — each becomes an error
result the model can read and correct. Only cancellation propagates.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import anyio
from pydantic import BaseModel, JsonValue, ValidationError

from harness.events import Event
from harness.types import JsonObject, ToolCall, ToolResult, ToolSpec
from prompts import strip_fence_tags

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "ArgumentsError",
    "FunctionTool",
    "RawTool",
    "Tool",
    "ToolOutput",
    "ToolRegistry",
    "ToolSource",
    "capped_result",
    "describe_validation",
    "error_json",
    "model_schema",
    "parse_arguments",
]

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool returns: the text for the model, and events for the caller."""

    content: str
    is_error: bool = False
    events: tuple[Event, ...] = ()


class Tool(Protocol):
    @property
    def spec(self) -> ToolSpec: ...

    async def __call__(self, arguments: str) -> ToolOutput: ...


def error_json(message: str) -> str:
    """The compact error reply every tool failure uses."""
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


MAX_ARGUMENT_CHARS = 1_000_000
"""The longest argument text a tool accepts (a model that sends more is looping)."""
MAX_ARGUMENT_DEPTH = 64
"""The deepest nesting of JSON arrays/objects accepted in tool arguments."""

# The tokens that can change the nesting depth or the string state of JSON text: an
# escape (a backslash and the character it escapes), a quote, a bracket.
_STRUCTURE = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


class ArgumentsError(ValueError):
    """Tool arguments that cannot be used; the message tells the model what to send instead."""


def _nesting_depth(text: str, limit: int) -> int:
    """The deepest array/object nesting in JSON text, stopping once it passes `limit`.

    One linear pass over the structural tokens, skipping string contents, so it is safe on
    text that would make a recursive parser overflow the stack.
    """
    depth = deepest = 0
    in_string = False
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token == '"':
            in_string = not in_string
        elif in_string or len(token) > 1:
            continue  # bracket inside a string, or an escape
        elif token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        else:
            depth -= 1
    return deepest


def parse_arguments(text: str) -> JsonValue:
    """Parse a tool call's argument text as JSON, safely.

    Empty text is `{}`. The text is bounded in size (`MAX_ARGUMENT_CHARS`) and nesting
    (`MAX_ARGUMENT_DEPTH`) before the parser sees it, so no input can raise
    `RecursionError` or hold the loop for long.

    Raises:
        ArgumentsError: the text is too long, nested too deeply, or not JSON; the message
            says what to send instead.
    """
    if not text.strip():
        return {}
    if len(text) > MAX_ARGUMENT_CHARS:
        raise ArgumentsError(
            f"arguments are {len(text):,} characters; the limit is {MAX_ARGUMENT_CHARS:,}. Send a short JSON object"
        )
    if _nesting_depth(text, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        raise ArgumentsError(
            f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels; send a flat JSON object"
        )
    try:
        parsed: JsonValue = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"arguments are not valid JSON ({exc.msg}); send one JSON object") from None
    except RecursionError:  # defence in depth: the depth check above should make this unreachable
        raise ArgumentsError("arguments nest too deeply; send a flat JSON object") from None
    return parsed


def model_schema(model: type[BaseModel]) -> JsonObject:
    """A pydantic model's JSON schema as a tool's `parameters` (titles dropped: the model does not need them)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    props = schema.get("properties")
    if isinstance(props, dict):
        for prop in props.values():
            if isinstance(prop, dict):
                prop.pop("title", None)
    return schema


def capped_result(text: str, cap: int, *, message_id: int | None) -> str:
    """A tool result cut to at most `cap` characters for the transcript: head, marker, tail.

    The marker says how much was cut and, when the full output is in the session store
    (`message_id`), how to read on: `session_search` with that `message_id` and the offset
    where the cut begins. Deterministic, so the capped text replays byte for byte.
    """
    if len(text) <= cap:
        return text
    total = f"{len(text):,}"
    where = (
        f"the full output is stored as message {message_id}: session_search with "
        f"message_id={message_id} and offset={{at}} reads on from here"
        if message_id is not None
        else "the cut part cannot be read back"
    )
    # Sized for the longest marker this text can get, so head + marker + tail fits `cap`.
    probe = f"\n[... {total} of {total} characters cut; {where.format(at=len(text))} ...]\n"
    room = max(0, cap - len(probe))
    head = room * 3 // 4
    tail = room - head
    marker = f"\n[... {len(text) - head - tail:,} of {total} characters cut; {where.format(at=head)} ...]\n"
    return f"{text[:head]}{marker}{text[len(text) - tail :] if tail else ''}"


def describe_validation(exc: ValidationError) -> str:
    """A validation error as one line the model can act on."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    return "invalid arguments — " + "; ".join(problems)


class FunctionTool(Generic[M]):
    """A tool whose arguments are validated into `args_model` before `fn` sees them."""

    def __init__(
        self,
        name: str,
        description: str,
        args_model: type[M],
        fn: Callable[[M], Awaitable[str | ToolOutput]],
    ) -> None:
        self._spec = ToolSpec(name=name, description=description, parameters=model_schema(args_model))
        self._model = args_model
        self._fn = fn

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def __call__(self, arguments: str) -> ToolOutput:
        try:
            raw = parse_arguments(arguments)
        except ArgumentsError as exc:
            return ToolOutput(error_json(str(exc)), True)
        try:
            args = self._model.model_validate(raw)
        except ValidationError as exc:
            return ToolOutput(error_json(describe_validation(exc)), True)
        out = await self._fn(args)
        return out if isinstance(out, ToolOutput) else ToolOutput(out)


class RawTool:
    """A tool whose handler receives the raw argument text and validates it itself."""

    def __init__(self, spec: ToolSpec, fn: Callable[[str], Awaitable[ToolOutput]]) -> None:
        self._spec = spec
        self._fn = fn

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def __call__(self, arguments: str) -> ToolOutput:
        return await self._fn(arguments)


class ToolSource(Protocol):
    """A group of tools that may change between prompt rebuilds (an MCP server)."""

    @property
    def name(self) -> str:
        """Where the tools come from, for messages (`MCP server 'files'`)."""
        ...

    def tools(self) -> Sequence[Tool]: ...

    async def refreshed(self) -> Sequence[Tool] | None:
        """The new tools if they changed since the last call, else None."""
        ...


@dataclass(eq=False)
class _Group:
    source: ToolSource
    tools: list[Tool]


class ToolRegistry:
    """Named tools in registration order (the order is part of the cached prefix).

    A `ToolSource` joins as a group that keeps its place; its tools change only in
    `refresh`, which the session runs when it rebuilds the system prompt — never between.
    """

    def __init__(self, *, timeout_s: float = 60.0) -> None:
        self._tools: dict[str, Tool] = {}
        self._slots: list[Tool | _Group] = []
        self.timeout_s = timeout_s

    def add(self, tool: Tool) -> None:
        name = tool.spec.name
        if name in self._tools:
            raise ValueError(f"a tool named {name!r} is already registered")
        self._tools[name] = tool
        self._slots.append(tool)

    def add_source(self, source: ToolSource) -> None:
        """Register a source's tools as one group (a name already taken is a `ValueError`)."""
        tools = list(source.tools())
        self._check(tools, source, replacing=())
        self._slots.append(_Group(source, tools))
        self._tools.update((t.spec.name, t) for t in tools)

    def _check(self, tools: Sequence[Tool], source: ToolSource, *, replacing: Sequence[Tool]) -> None:
        ours = {t.spec.name for t in replacing}
        seen: set[str] = set()
        for t in tools:
            name = t.spec.name
            if (name in self._tools and name not in ours) or name in seen:
                raise ValueError(f"tool {name!r} of {source.name} has the name of a tool already registered")
            seen.add(name)

    async def refresh(self) -> list[str]:
        """Apply the sources' changed tool lists; returns a note per source that changed.

        A source whose new list would clash with another tool keeps its old list.
        """
        notes: list[str] = []
        for slot in self._slots:
            if not isinstance(slot, _Group):
                continue
            new = await slot.source.refreshed()
            if new is None:
                continue
            try:
                self._check(new, slot.source, replacing=slot.tools)
            except ValueError as exc:
                notes.append(f"{exc}; its old tools are kept")
                continue
            notes.append(f"{slot.source.name}: the tool list changed ({len(slot.tools)} → {len(new)} tools)")
            slot.tools = list(new)
        tools: dict[str, Tool] = {}
        for slot in self._slots:
            if isinstance(slot, _Group):
                tools.update((t.spec.name, t) for t in slot.tools)
            else:
                tools[slot.spec.name] = slot
        self._tools = tools
        return notes

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def specs(self, only: Sequence[str] | None = None) -> tuple[ToolSpec, ...]:
        """Specs of all tools (or of those named in `only`), in registration order."""
        return tuple(t.spec for n, t in self._tools.items() if only is None or n in only)

    async def run(self, call: ToolCall) -> tuple[ToolResult, ToolOutput]:
        """Run one call; never raises except on cancellation."""
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            out = ToolOutput(error_json(f"unknown tool {call.name!r}; available tools: {known}"), True)
        else:
            out = await self._run_guarded(tool, call)
        content = strip_fence_tags(out.content)
        return ToolResult(call.id, call.name, content, out.is_error), out

    async def _run_guarded(self, tool: Tool, call: ToolCall) -> ToolOutput:
        result: ToolOutput | None = None
        with anyio.move_on_after(self.timeout_s):
            try:
                result = await tool(call.arguments)
            except Exception as exc:  # a crashing tool must not end the session
                log.warning("tool %r failed", call.name, exc_info=True)
                return ToolOutput(error_json(f"tool {call.name!r} failed: {type(exc).__name__}: {exc}"), True)
        if result is None:
            return ToolOutput(error_json(f"tool {call.name!r} timed out after {self.timeout_s:g} s"), True)
        return result

    async def run_all(self, calls: Sequence[ToolCall]) -> list[tuple[ToolResult, ToolOutput]]:
        """Run several calls concurrently; results come back in call order."""
        if len(calls) == 1:
            return [await self.run(calls[0])]
        slots: list[tuple[ToolResult, ToolOutput] | None] = [None] * len(calls)

        async def one(i: int, call: ToolCall) -> None:
            slots[i] = await self.run(call)

        async with anyio.create_task_group() as tg:
            for i, call in enumerate(calls):
                tg.start_soon(one, i, call)
        return [s for s in slots if s is not None]
