"""Every tool a session opened with a config would give the agent, in registry order — for
`keel tools list`. MCP servers are started, listed and stopped; nothing else runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

import anyio.to_thread

from harness.config import KeelConfig
from harness.function_tools import ToolFunction, import_tool, python_tool
from harness.mcp import McpToolSource, connect
from harness.wiring.semantic import semantic_provider
from harness.wiring.steps import new_manager
from memory import memory_tool_schema, session_search_schema
from memory.providers.holographic import HolographicProvider
from memory.skills import skill_manage_schema, skill_view_schema, skills_list_schema
from prompts import load_text

__all__ = ["ToolListing", "tool_listing"]


@dataclass(frozen=True, slots=True)
class ToolListing:
    """One tool: its name, where it comes from, and the first line of its description."""

    name: str
    source: str
    description: str


def _first_line(text: str, limit: int = 100) -> str:
    """The description's first sentence or line, at most `limit` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = line.split(". ")[0].rstrip(".")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _builtin(config: KeelConfig) -> list[ToolListing]:
    # Names come from the schemas, so each tool's name is written once, beside the tool.
    schemas: list[Mapping[str, object]] = []
    m = config.memory
    if m.memory_enabled or m.user_profile_enabled:
        schemas.append(memory_tool_schema(load_text("tool_memory")))
    if config.session_search.enabled:
        schemas.append(session_search_schema(load_text("tool_session_search")))
    if config.skills.enabled:
        schemas += (
            skills_list_schema(load_text("tool_skills_list")),
            skill_view_schema(load_text("tool_skill_view")),
            skill_manage_schema(load_text("tool_skill_manage")),
        )
    return [
        ToolListing(str(schema["name"]), "keel", _first_line(str(schema.get("description", ""))))
        for schema in schemas
    ]


def _provider(config: KeelConfig) -> list[ToolListing]:
    m = config.memory
    manager = new_manager(config)
    if m.provider == "holographic":
        manager.add_provider(HolographicProvider(db_path=m.holographic.db_path))
    elif m.provider == "semantic":

        async def never(request: object) -> object:  # listing only: no model call is made
            raise AssertionError("no model call while listing tools")

        manager.add_provider(semantic_provider(config, send=never))  # type: ignore[arg-type]  # never called
    source = f"memory provider {m.provider!r}"
    return [
        ToolListing(str(s["name"]), source, _first_line(str(s.get("description", ""))))
        for s in manager.tool_schemas()
    ]


async def tool_listing(
    config: KeelConfig, *, environ: Mapping[str, str], functions: Sequence[ToolFunction] = ()
) -> list[ToolListing]:
    """The tools, in the order a session registers them.

    Raises:
        ConfigError, ToolServerError: as `open_session` would for the same config.
    """
    out = _builtin(config) + _provider(config)
    limits = config.limits
    for path in config.tools:
        fn = await anyio.to_thread.run_sync(import_tool, path)
        t = python_tool(fn, timeout_s=limits.tool_timeout_s, max_output_chars=limits.tool_output_chars)
        out.append(ToolListing(t.spec.name, f"python {path}", _first_line(t.spec.description)))
    for fn in functions:
        t = python_tool(fn, timeout_s=limits.tool_timeout_s, max_output_chars=limits.tool_output_chars)
        out.append(ToolListing(t.spec.name, "python", _first_line(t.spec.description)))
    async with AsyncExitStack() as stack:
        for server in config.mcp.servers:
            connection = await stack.enter_async_context(
                connect(server, environ=environ, max_output_chars=limits.tool_output_chars)
            )
            for tool in McpToolSource(connection).tools():
                spec = tool.spec
                out.append(
                    ToolListing(spec.name, f"MCP server {server.name!r}", _first_line(spec.description))
                )
    return out
