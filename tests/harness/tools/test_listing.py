"""`keel tools list`'s listing: every tool a session would get, in registry order, with its source."""

from __future__ import annotations

import sys

from harness.config import McpServerConfig
from harness.testing import config
from harness.tools.listing import tool_listing


def ping(host: str) -> str:
    """Ping a host. Returns the round trip."""
    return host


async def test_the_listing_names_keel_python_and_mcp_tools_in_order() -> None:
    cfg = config(skills__enabled="false")
    server = McpServerConfig(
        name="proj", command=sys.executable, args=("-m", "harness.testing.project_server")
    )
    cfg = cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": (server,)})})
    listing = await tool_listing(cfg, environ={}, functions=[ping])
    names = [t.name for t in listing]
    assert names[:2] == ["memory", "session_search"]
    assert "skill_view" not in names
    assert names[2] == "ping"
    assert names[3:] == ["proj__grep", "proj__list_files", "proj__read_file", "proj__run_tests"]
    by_name = {t.name: t for t in listing}
    assert by_name["ping"].source == "python" and by_name["ping"].description == "Ping a host"
    assert by_name["proj__grep"].source == "MCP server 'proj'"
