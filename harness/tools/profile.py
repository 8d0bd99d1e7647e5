"""Tool profiles: what a model is shown of each tool.

`full` shows every tool as registered. `compact`, for small local models (`prompt.tool_profile`,
`auto` → compact for `model.provider: local`), shows keel's own tools with the short
descriptions in `prompts/text/tool_<name>_compact.md`, other tools (MCP servers, the user's
functions) with the first sentence of their description, every parameter description cut to
its first sentence, and leaves out `HIDDEN_WHEN_COMPACT` (a call to one still runs). The rewrite is a pure function of the
spec, so the tool list stays byte-stable from request to request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pydantic import JsonValue

from harness.types import ToolSpec
from prompts import load_text

__all__ = ["COMPACT_DESCRIPTIONS", "HIDDEN_WHEN_COMPACT", "ToolProfile", "compact_spec", "profile_for"]

ToolProfile = Literal["full", "compact"]
Profile = Callable[[ToolSpec], ToolSpec | None]

COMPACT_DESCRIPTIONS = frozenset({"memory", "session_search", "skill_view"})
"""keel's tools with a hand-written short description (`prompts/text/tool_<name>_compact.md`)."""
HIDDEN_WHEN_COMPACT = frozenset({"skills_list", "skill_manage"})
"""Tools not shown under the compact profile: `skills_list` (the skills index in the prompt
names every skill) and `skill_manage` (writing procedures after long tasks is a choice a small
model rarely makes well; `prompt.tool_profile: full` shows it)."""
_TOOL_CHARS = 240
_PARAM_CHARS = 100
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def first_sentence(text: str, limit: int) -> str:
    """The first sentence of `text` (its first paragraph if it has no full stop), at most `limit` characters."""
    head = text.strip().split("\n\n", 1)[0].replace("\n", " ")
    head = _SENTENCE.split(head, maxsplit=1)[0]
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def _compact_schema(value: JsonValue) -> JsonValue:
    if isinstance(value, list):
        return [_compact_schema(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, JsonValue] = {}
    for key, item in value.items():
        if key in ("examples", "title", "$comment"):
            continue
        if key == "description" and isinstance(item, str):
            out[key] = first_sentence(item, _PARAM_CHARS)
        elif key == "properties" and isinstance(item, dict):
            out[key] = {name: _compact_schema(sub) for name, sub in item.items()}  # names kept as they are
        else:
            out[key] = _compact_schema(item)
    return out


def compact_spec(spec: ToolSpec) -> ToolSpec | None:
    """`spec` as the compact profile shows it (None: not shown)."""
    if spec.name in HIDDEN_WHEN_COMPACT:
        return None
    if spec.name in COMPACT_DESCRIPTIONS:
        description = load_text(f"tool_{spec.name}_compact").strip()
    else:
        description = first_sentence(spec.description, _TOOL_CHARS)
    parameters = _compact_schema(spec.parameters)
    assert isinstance(parameters, dict)
    return ToolSpec(spec.name, description, parameters)


def profile_for(name: ToolProfile) -> Profile | None:
    """The spec rewrite of profile `name` (None: show the tools as registered)."""
    return compact_spec if name == "compact" else None
