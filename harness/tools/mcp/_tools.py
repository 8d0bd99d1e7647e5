"""A connected server's tools as registry tools: `<server>__<tool>`, in a stable order.

`McpToolSource` is what the registry asks at each prompt rebuild whether the list changed;
between rebuilds the tools (and so the cached prefix) stay exactly as they were.

A server's list is taken as it comes and made safe, each problem with a note (a warning for
the user) and the session going on: the tools are sorted by name (a server that re-orders
them between calls changes nothing); a name advertised twice is left out (which of the two
the server would run is unknowable); a tool whose name or schema cannot be a tool, or whose
schema is over `max_schema_bytes`, or whose description or schema carries an instruction to
assistants (`memory.gate.carries_instruction`: a server's text never reaches memory), is left
out with the reason; past `max_tools` the rest
(by name) are left out. A re-list that fails or offers nothing usable keeps the old list.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import cast

from mcp import types
from pydantic import JsonValue

from harness.errors import ToolServerError
from harness.tools.arguments import ArgumentsError, parse_arguments
from harness.tools.mcp._connection import McpConnection
from harness.tools.registry import RawTool, Tool, ToolOutput, error_json
from harness.types import JsonObject, ToolSpec
from memory.gate import carries_instruction

__all__ = ["McpToolSource", "tool_name", "usable_tools"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

log = logging.getLogger(__name__)


def tool_name(server: str, tool: str) -> str:
    """The registry name of `tool` on `server`."""
    return f"{server}__{tool}"


def _one(connection: McpConnection, tool: types.Tool) -> RawTool:
    name = tool_name(connection.name, tool.name)
    if not _NAME.match(name):
        raise ToolServerError(
            f"MCP server {connection.name!r} offers tool {tool.name!r}; as {name!r} it is not a valid tool name "
            "(1-64 letters, digits, '_' or '-'): rename the tool or shorten the server's name"
        )
    schema = cast(
        JsonObject, dict(tool.input_schema) if tool.input_schema else {"type": "object", "properties": {}}
    )
    if schema.get("type") != "object":
        raise ToolServerError(
            f"MCP server {connection.name!r}: tool {tool.name!r} has an input schema of type "
            f"{schema.get('type')!r}; tool arguments must be a JSON object"
        )
    spec = ToolSpec(name=name, description=tool.description or tool.title or "", parameters=schema)
    if carries_instruction(f"{spec.description}\n{json.dumps(schema, ensure_ascii=False)}"):
        raise ToolServerError(
            f"MCP server {connection.name!r}: tool {tool.name!r} has a description that carries an "
            "instruction to assistants (to remember or save something); a tool's description is the "
            "server's text, not the user's"
        )

    async def run(arguments: str) -> ToolOutput:
        try:
            parsed = parse_arguments(arguments)
        except ArgumentsError as exc:
            return ToolOutput(error_json(str(exc)), True)
        if not isinstance(parsed, dict):
            return ToolOutput(error_json("arguments must be one JSON object"), True)
        args: dict[str, JsonValue] = parsed
        return await connection.call(tool.name, args)

    return RawTool(spec, run)


def usable_tools(connection: McpConnection) -> tuple[list[RawTool], list[str]]:
    """The server's tools that can be registry tools (sorted, capped), and a note per problem."""
    config = connection.config
    listed = sorted(connection.tools, key=lambda t: t.name)
    counts = Counter(t.name for t in listed)
    notes: list[str] = []
    tools: list[RawTool] = []
    for name, n in sorted(counts.items()):
        if n > 1:
            notes.append(
                f"MCP server {connection.name!r} advertises tool {name!r} {n} times; it is left out "
                "(a server must name each tool once)"
            )
    for tool in listed:
        if counts[tool.name] > 1:
            continue
        size = len(json.dumps(tool.input_schema or {}, ensure_ascii=False))
        if size > config.max_schema_bytes:
            notes.append(
                f"MCP server {connection.name!r}: tool {tool.name!r} has an input schema of {size:,} bytes, "
                f"over mcp.servers[].max_schema_bytes ({config.max_schema_bytes:,}); it is left out"
            )
            continue
        try:
            tools.append(_one(connection, tool))
        except ToolServerError as exc:
            notes.append(f"{exc}; it is left out")
    if len(tools) > config.max_tools:
        notes.append(
            f"MCP server {connection.name!r} offers {len(tools):,} tools; only the first {config.max_tools:,} "
            "by name are used (mcp.servers[].max_tools)"
        )
        tools = tools[: config.max_tools]
    return tools, notes


class McpToolSource:
    """The tools of one connected server, re-listed only when the registry asks."""

    def __init__(self, connection: McpConnection) -> None:
        self.connection = connection
        self.name = f"MCP server {connection.name!r}"
        self._tools, self.notes = usable_tools(connection)
        """What was left out of the server's last list, and why (warnings for the user)."""

    def tools(self) -> Sequence[Tool]:
        return list(self._tools)

    async def refreshed(self) -> Sequence[Tool] | None:
        """The new tools if the server said its list changed (None: unchanged, or unusable)."""
        self.notes = []
        if not await self.connection.relist():
            if self.connection.relist_error is not None:
                self.notes = [f"{self.name}: {self.connection.relist_error}; its old tools are kept"]
            return None
        tools, self.notes = usable_tools(self.connection)
        if self.connection.tools and not tools:
            self.notes.append(f"{self.name} re-listed no usable tool; its old tools are kept")
            return None
        for note in self.notes:
            log.warning("%s", note)
        self._tools = tools
        return list(self._tools)
