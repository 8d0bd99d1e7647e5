"""keel's own tools as registry tools: memory, session_search, the skills tools, and the
external memory provider's tools — in that order (the order is part of the cached prefix).

`memory` knows nothing of the harness: its tools are JSON-schema dicts plus handlers. This
module maps them: `json_tool` wraps a handler that takes parsed JSON and answers JSON,
`memory_handler` is the `memory` tool with its events and provider notifications, and
`provider_tools` routes the provider's tools through the manager. `builtin_tools` puts the
handlers a session (or the listing) has behind their specs, in registration order.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from pydantic import JsonValue

from harness.events import MemoryWritten
from harness.telemetry import NO_TELEMETRY, Telemetry
from harness.telemetry.names import MemoryOperation
from harness.telemetry.port import MemoryOutcome
from harness.tools.arguments import ArgumentsError, parse_arguments
from harness.tools.registry import RawTool, Tool, ToolOutput, error_json
from harness.types import JsonObject, ToolSpec
from memory import (
    MemoryManager,
    MemoryTool,
    MemoryWrite,
    memory_tool_schema,
    session_search_schema,
)
from memory.curated.tool import MemoryToolReply
from memory.provenance import TurnProvenance
from memory.skills import skill_manage_schema, skill_view_schema, skills_list_schema
from prompts import load_text

__all__ = [
    "BuiltinHandlers",
    "JsonHandler",
    "RawHandler",
    "WriteGuard",
    "builtin_tools",
    "guarded",
    "json_tool",
    "memory_handler",
    "memory_tool",
    "provider_tools",
    "spec_from_schema",
]

JsonHandler = Callable[[JsonValue], Awaitable[str]]
"""A memory-side handler: parsed JSON arguments in, a JSON reply out."""
RawHandler = Callable[[str], Awaitable[ToolOutput]]
"""A handler of the model's raw argument text."""
WriteGuard = Callable[[str, Mapping[str, JsonValue]], Awaitable[str | None]]
"""Asked before a memory-writing tool runs (its name, its arguments): a refusal (the JSON the
model reads) or None to go on (`harness.wiring.tool_port.write_guard`: the provenance gate)."""


def guarded(name: str, handler: JsonHandler, guard: WriteGuard | None) -> JsonHandler:
    """`handler` of tool `name`, asking `guard` first."""
    if guard is None:
        return handler

    async def run(arguments: JsonValue) -> str:
        if isinstance(arguments, dict) and (refusal := await guard(name, arguments)) is not None:
            return refusal
        return await handler(arguments)

    return run


def spec_from_schema(schema: JsonObject) -> ToolSpec:
    """A `ToolSpec` from an OpenAI-style function object `{name, description, parameters}`."""
    name = schema.get("name")
    description = schema.get("description", "")
    parameters = schema.get("parameters", {})
    if not isinstance(name, str) or not isinstance(description, str) or not isinstance(parameters, dict):
        raise ValueError(f"not a function schema: {json.dumps(schema)[:200]}")
    return ToolSpec(name=name, description=description, parameters=parameters)


def _parse_arguments(arguments: str) -> JsonValue | ArgumentsError:
    """The model's argument text as JSON (bounded in size and depth), or why it is unusable."""
    try:
        return parse_arguments(arguments)
    except ArgumentsError as exc:
        return exc


def _success(text: str) -> bool:
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return True
    return not (isinstance(payload, dict) and payload.get("success") is False)


def json_tool(schema: JsonObject, handler: JsonHandler) -> RawTool:
    """Wrap a handler that takes parsed JSON arguments and returns a JSON reply."""

    async def run(arguments: str) -> ToolOutput:
        parsed = _parse_arguments(arguments)
        if isinstance(parsed, ArgumentsError):
            return ToolOutput(error_json(str(parsed)), True)
        text = await handler(parsed)
        return ToolOutput(text, is_error=not _success(text))

    return RawTool(spec_from_schema(schema), run)


_OPERATIONS: dict[str, MemoryOperation] = {
    "add": "create_memory",
    "replace": "update_memory",
    "remove": "delete_memory",
}


def _write_operation(arguments: str) -> tuple[MemoryOperation, str]:
    """The memory operation a `memory` call asks for (its first action) and the store it names,
    for telemetry; unreadable arguments count as `create_memory` on `memory`."""
    parsed = _parse_arguments(arguments)
    if not isinstance(parsed, dict):
        return "create_memory", "memory"
    action = parsed.get("action")
    ops = parsed.get("operations")
    if action is None and isinstance(ops, list) and ops and isinstance(ops[0], dict):
        action = ops[0].get("action")
    target = parsed.get("target")
    return _OPERATIONS.get(str(action), "create_memory"), target if isinstance(target, str) else "memory"


def _outcome(reply: MemoryToolReply) -> tuple[MemoryOutcome, str | None]:
    if reply.success:
        return "saved", None
    if reply.refused_reason == "held":
        return "held", None
    return "refused", reply.refused_reason


def memory_handler(
    tool: MemoryTool,
    *,
    manager: MemoryManager | None,
    provenance: Callable[[], TurnProvenance] | None = None,
    telemetry: Telemetry = NO_TELEMETRY,
) -> RawHandler:
    """The `memory` tool's handler: the store's, plus events and provider notifications.

    A write is told to the providers against the manager's current session id (it follows
    every switch: compression, a new conversation). `provenance` gives the user's own words
    and the untrusted text the model has read (`harness.loop.provenance`): a write repeating
    the latter is held or refused as `memory.untrusted_writes` says — the agent's writes and
    the compression flush's alike, since both come through here. With telemetry on, each
    call is a `create_memory`/`update_memory`/`delete_memory` span with its outcome.
    """

    async def run(arguments: str) -> ToolOutput:
        operation, store = _write_operation(arguments) if telemetry.enabled else ("create_memory", "")
        with telemetry.memory(operation, store=store) as span:
            reply = await tool.handle(arguments, provenance=None if provenance is None else provenance())
            outcome, reason = _outcome(reply)
            span.outcome(outcome, reason=reason)
        events = tuple(
            MemoryWritten(action=c.kind, target=c.target, content=c.content or c.previous or "")
            for c in reply.committed
        )
        if manager is not None:
            for c in reply.committed:
                await manager.notify_memory_write(
                    MemoryWrite(
                        action=c.kind,
                        target=c.target,
                        content=c.content or "",
                        old_text=c.old_text,
                        previous_content=c.previous,
                        session_id=manager.session_id,
                    )
                )
        return ToolOutput(reply.text, is_error=not reply.success, events=events)

    return run


def memory_tool(
    tool: MemoryTool,
    schema: JsonObject,
    *,
    manager: MemoryManager | None,
    provenance: Callable[[], TurnProvenance] | None = None,
) -> RawTool:
    """The `memory` tool (see `memory_handler`) under `schema`."""
    return RawTool(spec_from_schema(schema), memory_handler(tool, manager=manager, provenance=provenance))


def provider_tools(manager: MemoryManager, *, guard: WriteGuard | None = None) -> list[RawTool]:
    """The external provider's tools, routed through the manager (a write asking `guard` first)."""

    def one(schema: JsonObject) -> RawTool:
        spec = spec_from_schema(schema)

        async def run(arguments: str) -> ToolOutput:
            parsed = _parse_arguments(arguments)
            if isinstance(parsed, ArgumentsError):
                return ToolOutput(error_json(str(parsed)), True)
            if not isinstance(parsed, dict):
                return ToolOutput(error_json("arguments must be one JSON object"), True)
            refusal = None if guard is None else await guard(spec.name, parsed)
            text = refusal or await manager.handle_tool_call(spec.name, parsed)
            return ToolOutput(text, is_error=not _success(text))

        return RawTool(spec, run)

    return [one(s) for s in manager.tool_schemas()]


@dataclass(frozen=True, slots=True)
class BuiltinHandlers:
    """What keel's own tools call; a tool whose handler is None is not registered."""

    memory: RawHandler | None = None
    session_search: JsonHandler | None = None
    skills: tuple[JsonHandler, JsonHandler, JsonHandler] | None = None
    """`skills_list`, `skill_view`, `skill_manage`."""
    provider: MemoryManager | None = None
    """The manager that routes the external provider's tools."""
    write_guard: WriteGuard | None = None
    """Asked before the provider's writing tools (`fact_store`, `semantic_save`) run."""


def builtin_tools(handlers: BuiltinHandlers, *, provider_origin: str) -> list[tuple[str, Tool]]:
    """(where it comes from, tool) for each of keel's own tools, in registration order."""
    out: list[tuple[str, Tool]] = []
    if handlers.memory is not None:
        spec = spec_from_schema(memory_tool_schema(load_text("tool_memory")))
        out.append(("keel", RawTool(spec, handlers.memory)))
    if handlers.session_search is not None:
        schema = session_search_schema(load_text("tool_session_search"))
        out.append(("keel", json_tool(schema, handlers.session_search)))
    if handlers.skills is not None:
        listing, view, manage = handlers.skills
        out += (
            ("keel", json_tool(skills_list_schema(load_text("tool_skills_list")), listing)),
            ("keel", json_tool(skill_view_schema(load_text("tool_skill_view")), view)),
            ("keel", json_tool(skill_manage_schema(load_text("tool_skill_manage")), manage)),
        )
    if handlers.provider is not None:
        out += ((provider_origin, t) for t in provider_tools(handlers.provider, guard=handlers.write_guard))
    return out
