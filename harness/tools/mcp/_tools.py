"""A connected server's tools as registry tools: `<server>__<tool>`, in a stable order.

`McpToolSource` is what the registry asks at each prompt rebuild whether the list changed;
between rebuilds the tools (and so the cached prefix) stay exactly as they were.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

from mcp import types
from pydantic import JsonValue

from harness.errors import ToolServerError
from harness.tools.arguments import ArgumentsError, parse_arguments
from harness.tools.mcp._connection import McpConnection
from harness.tools.registry import RawTool, Tool, ToolOutput, error_json
from harness.types import JsonObject, ToolSpec

__all__ = ["McpToolSource", "tool_name"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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


class McpToolSource:
    """The tools of one connected server, re-listed only when the registry asks."""

    def __init__(self, connection: McpConnection) -> None:
        self.connection = connection
        self.name = f"MCP server {connection.name!r}"
        self._tools = [_one(connection, t) for t in connection.tools]

    def tools(self) -> Sequence[Tool]:
        return list(self._tools)

    async def refreshed(self) -> Sequence[Tool] | None:
        """The new tools if the server said its list changed (None: unchanged)."""
        if not await self.connection.relist():
            return None
        self._tools = [_one(self.connection, t) for t in self.connection.tools]
        return list(self._tools)
