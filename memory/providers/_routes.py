"""Tool routing: which provider owns which tool, and one call routed to it.

Schemas are normalized on registration (the wrapped `{type: function, function: {...}}`
shape is accepted); an external provider may not shadow a core tool, and the first
registration of a name wins.
"""

from __future__ import annotations

import json
import re
from functools import partial

from pydantic import JsonValue

from memory.providers._fanout import Entry, Fanout

__all__ = ["ToolRoutes"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolRoutes:
    """Tool name → owning provider, in registration order."""

    def __init__(self, fanout: Fanout, *, core_tool_names: frozenset[str]) -> None:
        self._fanout = fanout
        self._core = core_tool_names
        self._routes: dict[str, Entry] = {}
        self._schemas: dict[str, dict[str, JsonValue]] = {}

    def schemas(self) -> list[dict[str, JsonValue]]:
        return [dict(schema) for schema in self._schemas.values()]

    def owner(self, tool_name: str) -> str | None:
        entry = self._routes.get(tool_name)
        return None if entry is None else entry.name

    def load(self, entry: Entry) -> list[dict[str, JsonValue]] | None:
        """The provider's tool schemas, normalized; None (with a warning) when unreadable."""
        warn = self._fanout.warn
        try:
            raw: object = entry.provider.tool_schemas()
        except Exception as exc:
            warn(f"memory provider {entry.name!r} was refused: tool_schemas() raised {exc!r}")
            return None
        if not isinstance(raw, list):
            warn(f"memory provider {entry.name!r} was refused: tool_schemas() did not return a list")
            return None
        schemas: list[dict[str, JsonValue]] = []
        for item in raw:
            schema = _normalize_schema(item)
            if schema is None:
                warn(f"memory provider {entry.name!r} offered a malformed tool schema; it was skipped")
            else:
                schemas.append(schema)
        return schemas

    def add(self, entry: Entry, schema: dict[str, JsonValue]) -> None:
        tool = str(schema["name"])
        if entry.external and tool in self._core:
            self._fanout.warn(
                f"tool {tool!r} of memory provider {entry.name!r} shadows a core tool; it was refused"
            )
            return
        owner = self._routes.get(tool)
        if owner is not None:
            self._fanout.warn(
                f"tool {tool!r} of memory provider {entry.name!r} is already provided by {owner.name!r}; "
                "the first registration wins"
            )
            return
        self._routes[tool] = entry
        self._schemas[tool] = schema
        entry.tools.append(tool)

    def drop(self, entry: Entry) -> None:
        for tool in entry.tools:
            self._routes.pop(tool, None)
            self._schemas.pop(tool, None)

    async def call(self, name: str, arguments: dict[str, JsonValue], *, closed: bool) -> str:
        """Route a tool call to its provider; always returns JSON text, never raises."""
        entry = self._routes.get(name)
        if entry is None:
            return _error(f"unknown memory tool {name!r}; available: {sorted(self._routes)!r}")
        if closed:
            return _error(f"memory tool {name!r} is unavailable: the memory manager has shut down")
        outcome = await self._fanout.call(
            entry, f"tool {name!r}", partial(entry.provider.handle_tool_call, name, arguments)
        )
        if outcome.ok:
            if isinstance(outcome.value, str):
                return outcome.value
            self._fanout.warn(
                f"memory provider {entry.name!r} returned a non-string result from tool {name!r}"
            )
            return _error(f"Memory tool {name!r} failed: the provider returned no text")
        if outcome.reason == "paused":
            wait = 0.0 if entry.breaker is None else entry.breaker.seconds_until_trial()
            return _error(
                f"Memory tool {name!r} is paused after repeated failures of {entry.name!r}; "
                f"try again in {wait:.0f} s or continue without it"
            )
        return _error(f"Memory tool {name!r} failed: {outcome.detail}")


def _normalize_schema(raw: object) -> dict[str, JsonValue] | None:
    """Accept `{name, description, parameters}` or the wrapped `{type: function, function: {...}}`."""
    if not isinstance(raw, dict):
        return None
    inner = raw.get("function")
    if raw.get("type") == "function" and isinstance(inner, dict):
        raw = inner
    name = raw.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        return None
    description = raw.get("description", "")
    parameters = raw.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(description, str) or not isinstance(parameters, dict):
        return None
    try:
        json.dumps(parameters)
    except (TypeError, ValueError):
        return None
    return {"name": name, "description": description, "parameters": parameters}


def _error(message: str) -> str:
    return json.dumps({"error": message})
