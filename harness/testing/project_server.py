"""A deterministic MCP server over a small made-up project: for tests, benchmarks and demos.

```sh
python -m harness.testing.project_server              # stdio
python -m harness.testing.project_server --http 8765  # streamable HTTP on 127.0.0.1:8765/mcp
python -m harness.testing.project_server --faults     # also the tools tests use to break things
python -m harness.testing.project_server --meta       # also request_meta (echoes a call's _meta)
```

The project (`inventory/`, a dozen Python modules and their tests) is generated from fixed
text, so every run lists, reads and greps the same bytes. `run_tests` prints a long pytest-
like log — the big tool outputs real coding sessions are full of. With `--faults` the server
also offers `crash` (the process exits), `hang` (never answers), `huge` (a 5 MB result),
`picture` (an image block), `report` (structured content only), `refuse` (a tool error)
and `grow` (adds a tool and says so: a `subscriptions/listen` event, and
`notifications/tools/list_changed` for clients of earlier versions). With `--meta`,
`request_meta` answers with the `_meta` its call carried (the trace context a client passed).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from pydantic import Field

__all__ = ["PROJECT", "build_server", "main"]

_MODULES = ("stock", "orders", "pricing", "suppliers", "warehouse", "reports")


def _module(name: str, index: int) -> str:
    lines = [f'"""The {name} part of the inventory service."""', "", "from __future__ import annotations", ""]
    for n in range(1, 9):
        lines += [
            "",
            f"def {name}_rule_{n}(quantity: int, price_cents: int) -> int:",
            f'    """Rule {n} of {name}: scale by {index + n} and cap at {1000 * n}."""',
            f"    total = quantity * price_cents * {index + n}",
            f"    return min(total, {1000 * n})",
        ]
    return "\n".join(lines) + "\n"


def _test_module(name: str) -> str:
    lines = [f'"""Tests of inventory.{name}."""', "", f"from inventory.{name} import *  # noqa: F403", ""]
    for n in range(1, 9):
        lines += [
            "",
            f"def test_{name}_rule_{n}_caps() -> None:",
            f"    assert {name}_rule_{n}(10**6, 10**6) == {1000 * n}",
        ]
    return "\n".join(lines) + "\n"


def _project() -> dict[str, str]:
    files = {
        "README.md": "# inventory\n\nA small stock and order service. Run the tests with `run_tests`.\n",
        "inventory/__init__.py": '"""The inventory service."""\n',
    }
    for i, name in enumerate(_MODULES):
        files[f"inventory/{name}.py"] = _module(name, i)
        files[f"tests/test_{name}.py"] = _test_module(name)
    return files


PROJECT: dict[str, str] = _project()
"""Path → text of every file in the made-up project."""


def _test_log() -> str:
    out = [
        "============================= test session starts ==============================",
        "collected 48 items",
        "",
    ]
    for name in _MODULES:
        for n in range(1, 9):
            verdict = "FAILED" if (name, n) == ("pricing", 3) else "PASSED"
            out.append(f"tests/test_{name}.py::test_{name}_rule_{n}_caps {verdict}")
    out += ["", "=================================== FAILURES ==================================="]
    out += ["___________________________ test_pricing_rule_3_caps ___________________________", ""]
    out += [
        f"    frame {i}: inventory/pricing.py:{20 + i} in pricing_rule_3 — total = quantity * price_cents * 5"
        for i in range(60)
    ]
    out += [
        "E   assert 2999 == 3000",
        "",
        "FAILED tests/test_pricing.py::test_pricing_rule_3_caps - assert 2999 == 3000",
    ]
    out.append("========================= 1 failed, 47 passed in 0.42s =========================")
    return "\n".join(out)


def build_server(*, faults: bool = False, meta: bool = False) -> MCPServer:
    """The MCP server, with the fault tools and the `request_meta` tool when asked."""
    server = MCPServer("keel-project", instructions="A small made-up project to read, search and test.")

    @server.tool()
    def list_files() -> str:
        """List every file of the project, one path per line."""
        return "\n".join(sorted(PROJECT))

    @server.tool()
    def read_file(path: Annotated[str, Field(description="a path from list_files")]) -> str:
        """Read one file of the project."""
        if path not in PROJECT:
            raise ToolError(f"no file {path!r}; call list_files for the paths")
        return PROJECT[path]

    @server.tool()
    def grep(pattern: Annotated[str, Field(description="a regular expression")]) -> str:
        """Search every file for a regular expression; prints path:line: text for each match."""
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"bad pattern: {exc}") from None
        hits = [
            f"{path}:{i}: {line}"
            for path, text in sorted(PROJECT.items())
            for i, line in enumerate(text.splitlines(), 1)
            if rx.search(line)
        ]
        return "\n".join(hits) or "no matches"

    @server.tool()
    def run_tests() -> str:
        """Run the project's test suite and print the log."""
        return _test_log()

    if faults:
        _fault_tools(server)
    if meta:

        @server.tool()
        def request_meta(ctx: Context) -> str:
            """Return the `_meta` of this request as JSON (what a client propagated: trace context)."""
            return json.dumps(dict(ctx.request_context.meta or {}), sort_keys=True)

    return server


def _fault_tools(server: MCPServer) -> None:
    @server.tool()
    def crash() -> str:
        """Exit the server process at once."""
        sys.stderr.write("project_server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    async def hang() -> str:
        """Never answer."""
        await anyio.sleep(3600)
        return "late"

    @server.tool()
    def huge() -> str:
        """Return five megabytes of text."""
        return ("0123456789abcdef" * 64 + "\n") * (5 * 1024 * 1024 // 1025)

    @server.tool()
    def picture() -> Image:
        """Return a tiny PNG image."""
        return Image(data=base64.b64decode(_PNG), format="png")

    @server.tool(structured_output=True)
    def report() -> dict[str, int]:
        """Return counts as structured content."""
        return {"passed": 47, "failed": 1}

    @server.tool()
    def refuse() -> str:
        """Always fail with a tool error."""
        raise ToolError("refused on purpose")

    async def extra() -> str:
        """A tool added at run time."""
        return "extra"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool `extra` and tell the client the tool list changed."""
        server.add_tool(extra, name="extra")
        await ctx.notify_tools_changed()  # 2026-07-28: to `subscriptions/listen` subscribers
        await ctx.session.send_tool_list_changed()  # earlier versions: the notification
        return "grown"


_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="project_server", description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--faults", action="store_true", help="also offer the fault tools")
    parser.add_argument("--meta", action="store_true", help="also offer request_meta (echoes a call's _meta)")
    args = parser.parse_args(argv)
    server = build_server(faults=args.faults, meta=args.meta)
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
