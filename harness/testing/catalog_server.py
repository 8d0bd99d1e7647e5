"""An MCP server with a hundred tools of one domain: for the deferred-tools tests and benchmark.

```sh
python -m harness.testing.catalog_server billing   # stdio; also: issues, files
```

Each tool is a verb and a noun of the domain (`create_invoice`, `archive_label`, …), with a
one-sentence description and two parameters, and answers with a line naming what it did — so
that a search by meaning ("give a customer their money back") has one right answer, and a
call's result shows that the right tool ran. Built with the SDK, so it speaks the current
protocol.
"""

import argparse
from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

__all__ = ["DOMAINS", "VERBS", "build_server", "main"]

VERBS: dict[str, str] = {
    "create": "Create a new",
    "list": "List every",
    "get": "Read one",
    "update": "Change the fields of a",
    "delete": "Delete a",
    "search": "Search by text for a",
    "archive": "Archive a",
    "export": "Export as CSV a",
    "restore": "Restore from the archive a",
    "count": "Count each",
}

DOMAINS: dict[str, tuple[str, ...]] = {
    "billing": (
        "invoice", "payment", "refund", "customer", "subscription",
        "coupon", "tax_rate", "receipt", "plan", "credit_note",
    ),
    "issues": (
        "issue", "comment", "label", "milestone", "assignee",
        "project", "sprint", "epic", "attachment", "board",
    ),
    "files": (
        "file", "folder", "share_link", "version", "tag",
        "permission", "trash_item", "thumbnail", "quota", "lock",
    ),
}  # fmt: skip


def _tool(verb: str, noun: str, domain: str) -> tuple[str, str, Callable[[str, str], str]]:
    name = f"{verb}_{noun}"
    description = f"{VERBS[verb]} {noun.replace('_', ' ')} in the {domain} service."

    def run(
        target: Annotated[str, Field(description="the id of the item to act on")],
        details: Annotated[str, Field(description="free-form details for the operation")] = "",
    ) -> str:
        return f"{domain}.{name} ran on {target}" + (f" ({details})" if details else "")

    return name, description, run


def build_server(domain: str) -> MCPServer:
    """The server of `domain` (one of `DOMAINS`), with its hundred tools."""
    server = MCPServer(f"keel-catalog-{domain}")
    for noun in DOMAINS[domain]:
        for verb in VERBS:
            name, description, run = _tool(verb, noun, domain)
            server.add_tool(run, name=name, description=description)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="catalog_server", description=__doc__.splitlines()[0])
    parser.add_argument("domain", choices=sorted(DOMAINS))
    args = parser.parse_args(argv)
    build_server(args.domain).run("stdio")


if __name__ == "__main__":
    main()
