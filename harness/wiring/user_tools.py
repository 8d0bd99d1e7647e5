"""The user's own tools joining the registry: Python functions and MCP servers.

They are registered after keel's own tools: the config's `tools` entries, then the
functions passed to `open_session(tools=...)`, then each `mcp.servers` entry's tools
(`<server>__<tool>`, sorted by name), in that order (the order is part of the cached
prefix). A name already taken is refused when the session opens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack

import anyio.to_thread

from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.function_tools import ToolFunction, import_tool, python_tools
from harness.mcp import McpToolSource, connect
from harness.tools import Tool, ToolRegistry

__all__ = ["add_mcp_servers", "add_tools", "user_tools"]


async def user_tools(config: KeelConfig, functions: Sequence[ToolFunction]) -> list[Tool]:
    """The config's `tools` (imported in a worker thread) and `functions`, as tools.

    Raises:
        ConfigError: an entry cannot be imported, or a function cannot be a tool.
    """
    imported = [await anyio.to_thread.run_sync(import_tool, path) for path in config.tools]
    limits = config.limits
    return list(
        python_tools(
            [*imported, *functions],
            timeout_s=limits.tool_timeout_s,
            max_output_chars=limits.tool_output_chars,
        )
    )


def add_tools(registry: ToolRegistry, tools: Sequence[Tool], *, source: str) -> None:
    """Register `tools`; a name already registered is a `ConfigError` naming both."""
    for tool in tools:
        name = tool.spec.name
        if name in registry:
            raise ConfigError(
                f"tool {name!r} from {source} has the name of a tool already registered; rename one "
                f"(@harness.tool(name=...) for a Python function)"
            )
        registry.add(tool)


async def add_mcp_servers(
    stack: AsyncExitStack, registry: ToolRegistry, config: KeelConfig, *, environ: Mapping[str, str]
) -> None:
    """Connect every `mcp.servers` entry (in order; each closes with `stack`) and register its tools.

    Raises:
        ToolServerError: a server would not start or list its tools; those started before it
            are stopped as `stack` unwinds, so nothing is left running.
        ConfigError: a server's tool has the name of a tool already registered.
    """
    for server in config.mcp.servers:
        connection = await stack.enter_async_context(
            connect(server, environ=environ, max_output_chars=config.limits.tool_output_chars)
        )
        source = McpToolSource(connection)
        try:
            registry.add_source(source)
        except ValueError as exc:
            raise ConfigError(f"{exc}; rename the server (mcp.servers[].name) or your tool") from None
