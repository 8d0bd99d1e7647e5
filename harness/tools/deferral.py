"""Deferred tools: hundreds of MCP tools without bloating or busting the cached prefix.

When the MCP servers' tool schemas would take more than `mcp.defer_share` of the model's
context window, the registry stops sending them. In their place the request carries one
built-in tool, `tool_search`, whose description is a compact catalog of every deferred tool
(`server: tool, tool, …`, sorted). The agent searches (`query`), reads the matching tools'
full schemas in the search result — the volatile tail of the conversation, never the prompt
— and calls a found tool by its full name (`server__tool`); the registry runs it like any
other. Which tools are deferred, and the catalog, are decided when the registry is built and
again only at a prompt rebuild (`ToolRegistry.refresh`), so the system text and the request's
tool list stay byte-identical for the whole session until then.

With `mcp.defer_native` (Anthropic), the same search runs under the provider's own deferred
loading: the registry also hands each request the deferred specs (`deferred_specs`, sorted, the
same until a rebuild), which the Anthropic wire lists with `defer_loading: true`, and it sends
a search result as `tool_reference` blocks that the API expands into those tools' definitions.

The size of the schemas is estimated (`estimate_tokens`: four characters of compact JSON a
token), which is all a threshold needs; the measured figures are in `benchmarks/many_tools.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from harness.tools.registry import ToolOutput, validated_arguments
from harness.types import ToolSpec

__all__ = ["SEARCH_NAME", "Deferral", "ToolSearch", "estimate_tokens"]

SEARCH_NAME = "tool_search"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "as",
        "at",
        "by",
        "each",
        "every",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "one",
        "or",
        "the",
        "to",
        "with",
    ]
)


def estimate_tokens(specs: Sequence[ToolSpec]) -> int:
    """About how many prompt tokens these tool definitions take (4 characters of JSON a token)."""
    size = sum(len(json.dumps([s.name, s.description, s.parameters], separators=(",", ":"))) for s in specs)
    return size // 4


def _catalog(specs: Sequence[ToolSpec]) -> str:
    groups: dict[str, list[str]] = {}
    for spec in sorted(specs, key=lambda s: s.name):
        server, _, tool = spec.name.partition("__")
        groups.setdefault(server if tool else "", []).append(tool or spec.name)
    return "\n".join(f"{server}: {', '.join(tools)}" for server, tools in sorted(groups.items()))


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=500)
    limit: int = Field(3, ge=1, le=20)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " "))) - _STOP


class ToolSearch:
    """The `tool_search` tool over a fixed set of deferred tools (see the module docstring)."""

    def __init__(self, deferred: Sequence[ToolSpec]) -> None:
        self._deferred = sorted(deferred, key=lambda s: s.name)
        self._spec = ToolSpec(
            name=SEARCH_NAME,
            description=(
                f"Find tools to call. {len(self._deferred)} more tools are available but not listed; "
                "search them by what you want to do (`query`), read the schemas in the result, then "
                "call a found tool by its full name (server__tool). The tools, by server:\n"
                + _catalog(self._deferred)
            ),
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what the tool should do, or its name"},
                    "limit": {"type": "integer", "description": "most tools to return (default 3)"},
                },
                "required": ["query"],
            },
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def search(self, query: str, limit: int) -> list[ToolSpec]:
        """The deferred tools that best match `query` (an exact name first), best first."""
        wanted = _words(query)
        exact = [
            s for s in self._deferred if s.name == query.strip() or s.name.partition("__")[2] == query.strip()
        ]
        scored: list[tuple[float, str, ToolSpec]] = []
        for spec in self._deferred:
            if spec in exact:
                continue
            name_words = _words(spec.name)
            text_words = _words(spec.description)
            score = 2.0 * len(wanted & name_words) + len(wanted & text_words)
            if score > 0:
                scored.append((-score, spec.name, spec))
        return [*exact, *(s for _, _, s in sorted(scored))][:limit]

    async def __call__(self, arguments: str) -> ToolOutput:
        args = validated_arguments(_Query, arguments)
        if isinstance(args, ToolOutput):
            return args
        found = self.search(args.query, args.limit)
        tools = [{"name": s.name, "description": s.description, "parameters": s.parameters} for s in found]
        note = (
            "call one of these by its name with arguments matching its parameters"
            if tools
            else "no tool matches; try other words, or a server's name from the catalog"
        )
        return ToolOutput(json.dumps({"success": True, "tools": tools, "note": note}, ensure_ascii=False))


class Deferral:
    """The registry's deferral policy: a `ToolSearch` over the MCP tools once their schemas
    pass `max_tokens` (estimated), else None (they are sent as they are)."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens

    def __call__(self, specs: Sequence[ToolSpec]) -> ToolSearch | None:
        if not specs or estimate_tokens(specs) <= self.max_tokens:
            return None
        return ToolSearch(specs)
