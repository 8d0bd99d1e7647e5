"""The `mcp` section: which MCP servers a session connects to (see `harness.tools.mcp`)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from harness.config._section import Section

__all__ = ["McpConfig", "McpServerConfig"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class McpServerConfig(Section):
    """One MCP server: a command over stdio, or a URL (streamable HTTP)."""

    name: str = Field(pattern=r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$", max_length=32)
    """Prefixes its tools: `<name>__<tool>` (letters, digits, '-', single '_')."""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Variables the server gets: each value names a variable of keel's environment to pass."""
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers: each value names an environment variable holding the header's value."""
    timeout_s: float = Field(30.0, gt=0)
    """The longest one tool call may take."""
    startup_timeout_s: float = Field(20.0, gt=0)
    """The longest the server may take to start and list its tools."""
    max_result_bytes: int = Field(16_000_000, ge=10_000)
    """The most one reply may take on the wire; a longer one is refused as it streams."""
    max_result_lines: int = Field(200_000, ge=100)
    """The most lines one HTTP reply (an SSE stream) may take."""
    max_tools: int = Field(300, ge=1)
    """The most tools taken from the server (by name); the rest are left out with a warning."""
    max_schema_bytes: int = Field(100_000, ge=1000)
    """A tool whose input schema is larger is left out with a warning."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"server {self.name!r} needs exactly one of command (stdio) or url (streamable HTTP)"
            )
        if self.url is not None and not re.match(r"^https?://[^\s/]+", self.url):
            raise ValueError(f"server {self.name!r}: url {self.url!r} is not an http:// or https:// URL")
        if self.url is None and self.headers:
            raise ValueError(f"server {self.name!r}: headers need a url; a stdio server takes env")
        return self

    @field_validator("env", "headers")
    @classmethod
    def _variable_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key, var in value.items():
            if not _ENV_NAME.match(var):
                raise ValueError(f"{key}: {var!r} must name an environment variable (letters, digits, '_')")
        return value


class McpConfig(Section):
    servers: tuple[McpServerConfig, ...] = ()
    defer_share: float = Field(0.1, gt=0, le=0.25)
    """Past this share of `model.context_window`, the servers' tool schemas are deferred
    behind `tool_search` (a compact catalog in the tool list; schemas found on demand)."""
    defer_native: bool = False
    """With `model.provider: anthropic`, deferred tools also use the API's own deferred
    loading: the request lists them marked `defer_loading: true` (the same list all session)
    and a `tool_search` result is sent as `tool_reference` blocks the API expands."""

    @field_validator("servers")
    @classmethod
    def _unique(cls, value: tuple[McpServerConfig, ...]) -> tuple[McpServerConfig, ...]:
        seen: set[str] = set()
        for server in value:
            if server.name in seen:
                raise ValueError(f"two servers are named {server.name!r}; give each a different name")
            seen.add(server.name)
        return value
