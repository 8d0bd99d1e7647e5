"""Every tool a session opened with a config would give the agent, in registry order — for
`keel tools list`.

The listing runs the session's own registration (`register.py`) into an empty registry, with
handlers that are never called: MCP servers are started, listed and stopped; nothing else runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

from pydantic import JsonValue

from harness.config import KeelConfig
from harness.tools.builtin import BuiltinHandlers
from harness.tools.functions import ToolFunction
from harness.tools.register import register_tools
from harness.tools.registry import ToolOutput, ToolRegistry
from memory import MemoryManager

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


async def _never_raw(arguments: str) -> ToolOutput:  # listing only: no tool is called
    raise AssertionError("no tool call while listing tools")


async def _never_json(arguments: JsonValue) -> str:
    raise AssertionError("no tool call while listing tools")


def _handlers(config: KeelConfig, provider: MemoryManager | None) -> BuiltinHandlers:
    """Stand-ins for keel's own tools, present as a primary session of `config` has them."""
    m = config.memory
    return BuiltinHandlers(
        memory=_never_raw if m.memory_enabled or m.user_profile_enabled else None,
        session_search=_never_json if config.session_search.enabled else None,
        skills=(_never_json, _never_json, _never_json) if config.skills.enabled else None,
        provider=provider,
    )


async def tool_listing(
    config: KeelConfig,
    *,
    environ: Mapping[str, str],
    functions: Sequence[ToolFunction] = (),
    provider: MemoryManager | None = None,
) -> list[ToolListing]:
    """The tools, in the order a session registers them.

    `provider`: the manager whose provider tools a session would route (the CLI passes
    `harness.wiring.tool_port.listing_manager(config)`; tools never import the wiring).

    Raises:
        ConfigError, ToolServerError: as `open_session` would for the same config.
    """
    registry = ToolRegistry()
    async with AsyncExitStack() as stack:
        await register_tools(
            stack, registry, config, builtin=_handlers(config, provider), functions=functions, environ=environ
        )
        specs = {spec.name: spec for spec in registry.specs()}
        return [
            ToolListing(name, origin, _first_line(specs[name].description))
            for name, origin in registry.origins()
        ]
