"""The MCP SDK stays behind `harness/tools/mcp/`: the rest of keel sees tool sources, never the SDK."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
ALLOWED = ("harness/tools/mcp/", "harness/testing/project_server.py", "harness/testing/catalog_server.py")


def _imports_mcp(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mcp" for a in node.names):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "mcp"
        ):
            return True
    return False


def test_only_the_mcp_package_and_the_test_server_import_the_sdk() -> None:
    offenders = [
        str(p.relative_to(REPO))
        for root in ("harness", "memory", "prompts")
        for p in (REPO / root).rglob("*.py")
        if _imports_mcp(p) and not str(p.relative_to(REPO)).startswith(ALLOWED)
    ]
    assert offenders == []
    assert _imports_mcp(REPO / "harness/tools/mcp/_connection.py")  # the check sees a real import
