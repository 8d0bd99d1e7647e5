"""The one registration of a session's tools, used by `open_session` and `keel tools list` alike.

The order is part of the cached prefix: keel's own tools (`builtin.py`: memory,
session_search, the skills tools, the memory provider's tools), then the config's `tools`
entries, then the functions passed to `open_session(tools=...)`, then each `mcp.servers`
entry's tools (`<server>__<tool>`, sorted by name). A name already taken is refused when
the session opens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack

import anyio.to_thread

from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.tools.builtin import BuiltinHandlers, builtin_tools
from harness.tools.functions import ToolFunction, import_tool, python_tools
from harness.tools.registry import Tool, ToolRegistry

__all__ = ["add_mcp_servers", "add_tools", "register_tools", "user_tools"]

log = logging.getLogger(__name__)


def _quiet(_: str) -> None:
    """No user to warn (`keel tools list`): the log has it."""


async def register_tools(
    stack: AsyncExitStack,
    registry: ToolRegistry,
    config: KeelConfig,
    *,
    builtin: BuiltinHandlers,
    functions: Sequence[ToolFunction],
    environ: Mapping[str, str],
    warn: Callable[[str], None] = _quiet,
) -> None:
    """Register every tool of a session in `registry`, in the order of the module docstring.

    MCP servers are started on `stack` and stop with it.

    Raises:
        ConfigError: a tool entry cannot be imported, a function cannot be a tool, or a name
            is already taken.
        ToolServerError: an MCP server would not start or list its tools.
    """
    for origin, tool in builtin_tools(builtin, provider_origin=f"memory provider {config.memory.provider!r}"):
        registry.add(tool, origin=origin)
    add_tools(registry, await user_tools(config, functions), source="your tools")
    await add_mcp_servers(stack, registry, config, environ=environ, warn=warn)


async def user_tools(config: KeelConfig, functions: Sequence[ToolFunction]) -> list[tuple[str, Tool]]:
    """(where it comes from, tool) for the config's `tools` (imported in a worker thread) and `functions`.

    Raises:
        ConfigError: an entry cannot be imported, or a function cannot be a tool.
    """
    imported = [await anyio.to_thread.run_sync(import_tool, path) for path in config.tools]
    origins = [*(f"python {path}" for path in config.tools), *("python" for _ in functions)]
    limits = config.limits
    tools = python_tools(
        [*imported, *functions],
        timeout_s=limits.tool_timeout_s,
        max_output_chars=limits.tool_output_chars,
    )
    return list(zip(origins, tools, strict=True))


def add_tools(registry: ToolRegistry, tools: Sequence[tuple[str, Tool]], *, source: str) -> None:
    """Register `tools` (with where each comes from); a name already registered is a `ConfigError` naming both."""
    for origin, tool in tools:
        name = tool.spec.name
        if name in registry:
            raise ConfigError(
                f"tool {name!r} from {source} has the name of a tool already registered; rename one "
                f"(@harness.tool(name=...) for a Python function)"
            )
        registry.add(tool, origin=origin)


async def add_mcp_servers(
    stack: AsyncExitStack,
    registry: ToolRegistry,
    config: KeelConfig,
    *,
    environ: Mapping[str, str],
    warn: Callable[[str], None] = _quiet,
) -> None:
    """Connect every `mcp.servers` entry (in order; each closes with `stack`) and register its tools.

    Raises:
        ToolServerError: a server would not start or list its tools; those started before it
            are stopped as `stack` unwinds, so nothing is left running.
        ConfigError: a server's tool has the name of a tool already registered.

    What a server's list had that could not be used (`McpToolSource.notes`) goes to `warn`.
    """
    if not config.mcp.servers:
        return
    # Imported only when a server is configured: the MCP SDK loads the OpenTelemetry API at
    # import, and a session without MCP (or telemetry) should load neither.
    from harness.tools.mcp import McpToolSource, connect

    for server in config.mcp.servers:
        connection = await stack.enter_async_context(
            connect(server, environ=environ, max_output_chars=config.limits.tool_output_chars)
        )
        source = McpToolSource(connection)
        for note in source.notes:
            log.warning("%s", note)
            warn(note)
        try:
            registry.add_source(source)
        except ValueError as exc:
            raise ConfigError(f"{exc}; rename the server (mcp.servers[].name) or your tool") from None
