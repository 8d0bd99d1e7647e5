"""The tool registry: what the model can call, and how calls become results.

A tool is anything with a `spec` (name, description, JSON schema) and an async
`__call__(arguments: str) -> ToolOutput` that receives the model's raw argument text.
`FunctionTool` validates that text into a pydantic model at the boundary (`arguments.py`);
`RawTool` hands it to a handler that validates on its own (the memory tool, provider tools).

Nothing a model sends can raise out of the registry: unknown tools, invalid JSON, arguments
that fail validation, a tool that crashes (with any `BaseException`, `SystemExit` included) or
runs past its timeout — each becomes an error result the model can read and correct. Only the
session's own cancellation propagates.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from harness.events import Event
from harness.telemetry import NO_TELEMETRY, Telemetry
from harness.tools.arguments import ArgumentsError, describe_validation, model_schema, parse_arguments
from harness.types import ToolCall, ToolResult, ToolSpec
from prompts import strip_fence_tags

__all__ = [
    "FunctionTool",
    "RawTool",
    "Tool",
    "ToolOutput",
    "ToolRegistry",
    "ToolSource",
    "error_json",
    "validated_arguments",
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


def validated_arguments(model: type[M], arguments: str) -> M | ToolOutput:
    """The model's argument text validated into `model`, or the error result it can read and correct."""
    try:
        return model.model_validate(parse_arguments(arguments))
    except ArgumentsError as exc:
        return ToolOutput(error_json(str(exc)), True)
    except ValidationError as exc:
        return ToolOutput(error_json(describe_validation(exc)), True)


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
        args = validated_arguments(self._model, arguments)
        if isinstance(args, ToolOutput):
            return args
        out = await self._fn(args)
        return out if isinstance(out, ToolOutput) else ToolOutput(out)


@dataclass(frozen=True, slots=True)
class RawTool:
    """A tool whose handler receives the raw argument text and validates it itself."""

    spec: ToolSpec
    fn: Callable[[str], Awaitable[ToolOutput]]

    async def __call__(self, arguments: str) -> ToolOutput:
        return await self.fn(arguments)


class ToolSource(Protocol):
    """A group of tools that may change between prompt rebuilds (an MCP server)."""

    @property
    def name(self) -> str:
        """Where the tools come from, for messages (`MCP server 'files'`)."""
        ...

    @property
    def notes(self) -> Sequence[str]:
        """What the source left out of its last list, and why (warnings for the user)."""
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

    def __init__(
        self,
        *,
        timeout_s: float = 60.0,
        telemetry: Telemetry = NO_TELEMETRY,
        defer: Callable[[Sequence[ToolSpec]], Tool | None] | None = None,
        profile: Callable[[ToolSpec], ToolSpec | None] | None = None,
        native_defer: bool = False,
    ) -> None:
        self.profile = profile
        self.native_defer = native_defer
        """Requests also list the deferred tools for the provider's own deferred loading
        (`deferred_specs`; `mcp.defer_native`)."""
        """What the model is shown of each tool (`harness.tools.profile`; None: the spec as is)."""
        self._defer = defer
        """Given the sources' specs, the tool that stands in for them (`tool_search`), or None
        to send them as they are (`harness.tools.deferral`); applied at `add_source` and
        `refresh` only, so the tool list never changes between rebuilds."""
        self._search: Tool | None = None
        self._deferred: frozenset[str] = frozenset()
        self._tools: dict[str, Tool] = {}
        self._slots: list[Tool | _Group] = []
        self._origins: dict[str, str] = {}
        self._sourced: set[str] = set()
        """Names of the tools a source (an MCP server) gave: their calls are MCP `tools/call`s."""
        self.timeout_s = timeout_s
        self.telemetry = telemetry
        """Each call is an `execute_tool {name}` span (a no-op unless export is on)."""

    def add(self, tool: Tool, *, origin: str = "") -> None:
        """Register `tool`; `origin` says where it comes from (for `keel tools list`)."""
        name = tool.spec.name
        if name in self._tools:
            raise ValueError(f"a tool named {name!r} is already registered")
        self._tools[name] = tool
        self._slots.append(tool)
        self._origins[name] = origin

    def add_source(self, source: ToolSource) -> None:
        """Register a source's tools as one group (a name already taken is a `ValueError`)."""
        tools = list(source.tools())
        self._check(tools, source, replacing=())
        self._slots.append(_Group(source, tools))
        self._tools.update((t.spec.name, t) for t in tools)
        self._sourced.update(t.spec.name for t in tools)
        self._apply_deferral()

    def _apply_deferral(self) -> None:
        sourced = [t for slot in self._slots if isinstance(slot, _Group) for t in slot.tools]
        search = None if self._defer is None else self._defer([t.spec for t in sourced])
        if search is not None and search.spec.name in self._tools:
            log.warning("a tool is named %r: the MCP tools are not deferred", search.spec.name)
            search = None
        self._search = search
        self._deferred = frozenset() if search is None else frozenset(t.spec.name for t in sourced)

    @property
    def deferred(self) -> frozenset[str]:
        """The tools not sent with requests, found through `tool_search` (empty: none)."""
        return self._deferred

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
            try:
                new = await slot.source.refreshed()
            except Exception as exc:  # a source's failure must not fail the rebuild
                log.warning("re-listing %s failed", slot.source.name, exc_info=True)
                notes.append(
                    f"{slot.source.name}: re-listing its tools failed ({exc}); its old tools are kept"
                )
                continue
            if new is None:
                notes.extend(slot.source.notes)
                continue
            if [t.spec for t in new] == [t.spec for t in slot.tools]:
                continue  # listed again, the same tools: nothing changes, the prefix least of all
            try:
                self._check(new, slot.source, replacing=slot.tools)
            except ValueError as exc:
                notes.append(f"{exc}; its old tools are kept")
                continue
            notes.append(f"{slot.source.name}: the tool list changed ({len(slot.tools)} → {len(new)} tools)")
            notes.extend(slot.source.notes)
            slot.tools = list(new)
        tools: dict[str, Tool] = {}
        sourced: set[str] = set()
        for slot in self._slots:
            if isinstance(slot, _Group):
                tools.update((t.spec.name, t) for t in slot.tools)
                sourced.update(t.spec.name for t in slot.tools)
            else:
                tools[slot.spec.name] = slot
        self._tools = tools
        self._sourced = sourced
        self._apply_deferral()
        return notes

    def get(self, name: str) -> Tool | None:
        if self._search is not None and name == self._search.spec.name:
            return self._search
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools or (self._search is not None and name == self._search.spec.name)

    @property
    def names(self) -> tuple[str, ...]:
        """Every tool a call may name (deferred ones and `tool_search` included)."""
        search = () if self._search is None else (self._search.spec.name,)
        return (*self._tools, *search)

    def origins(self) -> tuple[tuple[str, str], ...]:
        """(name, where it comes from) of every tool, in registration order; a source's
        tools come from the source's name."""
        out: list[tuple[str, str]] = []
        for slot in self._slots:
            if isinstance(slot, _Group):
                out.extend((t.spec.name, slot.source.name) for t in slot.tools)
            else:
                out.append((slot.spec.name, self._origins[slot.spec.name]))
        if self._search is not None:
            out.append((self._search.spec.name, f"keel: searches {len(self._deferred)} deferred tools"))
        return tuple(out)

    def specs(self, only: Sequence[str] | None = None) -> tuple[ToolSpec, ...]:
        """Specs of the tools a request carries (or of those named in `only`), in registration
        order, as the profile shows them; deferred tools and those the profile hides are left
        out (calls to them still run) and `tool_search` comes last."""
        sent = [
            t.spec for n, t in self._tools.items() if n not in self._deferred and (only is None or n in only)
        ]
        if self._search is not None and (only is None or self._search.spec.name in only):
            sent.append(self._search.spec)
        if self.profile is None:
            return tuple(sent)
        return tuple(s for s in map(self.profile, sent) if s is not None)

    def deferred_specs(self) -> tuple[ToolSpec, ...]:
        """With `native_defer`, the deferred tools' specs sorted by name (a request's
        `deferred_tools`: the same list until a rebuild), else none."""
        if not self.native_defer:
            return ()
        return tuple(self._tools[n].spec for n in sorted(self._deferred))

    async def run(self, call: ToolCall) -> tuple[ToolResult, ToolOutput]:
        """Run one call; never raises except on cancellation."""
        tool = self.get(call.name)
        with self.telemetry.tool(call, mcp=call.name in self._sourced) as span:
            if tool is None:
                known = ", ".join(t.name for t in self.specs()) or "none"
                more = f"; {len(self._deferred)} more are found with tool_search" if self._deferred else ""
                out = ToolOutput(
                    error_json(f"unknown tool {call.name!r}; available tools: {known}{more}"), True
                )
            else:
                out = await self._run_guarded(tool, call)
            content = strip_fence_tags(out.content)
            span.result(content, is_error=out.is_error)
        return ToolResult(call.id, call.name, content, out.is_error), out

    async def _run_guarded(self, tool: Tool, call: ToolCall) -> ToolOutput:
        result: ToolOutput | None = None
        with anyio.move_on_after(self.timeout_s):
            try:
                result = await tool(call.arguments)
            except anyio.get_cancelled_exc_class():
                raise  # the session's own cancellation (or this call's timeout)
            except (
                BaseException
            ) as exc:  # SystemExit, KeyboardInterrupt…: a crashing tool must not end the session
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
