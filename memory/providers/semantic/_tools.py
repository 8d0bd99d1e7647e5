"""The semantic provider's tools: schemas and argument models.

`semantic_profile` lists what is remembered about the user, `semantic_search` finds
memories by meaning, `semantic_save` stores a sentence verbatim (no extraction, still
scanned). Arguments come from the model and are validated here; the provider turns every
problem into a JSON `{"error": ...}` result. Descriptions are constants (memory cannot
import `prompts`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "PROFILE_TOOL",
    "SAVE_TOOL",
    "SEARCH_TOOL",
    "ProfileArgs",
    "SaveArgs",
    "SearchArgs",
    "semantic_tool_schemas",
]

PROFILE_TOOL = "semantic_profile"
SEARCH_TOOL = "semantic_search"
SAVE_TOOL = "semantic_save"

_PROFILE = (
    "Everything long-term memory holds about the user, newest first: preferences, tools, projects, "
    "people, plans. Use it when you need the whole picture rather than one answer."
)
_SEARCH = (
    "Search long-term memory about the user by meaning, not just words: 'what does the user use for "
    "testing?' finds 'prefers pytest over unittest'. Returns the best matches with their ids."
)
_SAVE = (
    "Store one fact about the user verbatim, exactly as you phrase it, for future conversations "
    "(facts are also extracted from each exchange automatically; use this when you already have the "
    "exact wording). Write a standalone declarative sentence, not an instruction."
)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProfileArgs(_Args):
    limit: int = Field(50, ge=1, le=500)


class SearchArgs(_Args):
    query: str = Field(min_length=1, max_length=2000)
    limit: int = Field(5, ge=1, le=50)


class SaveArgs(_Args):
    content: str = Field(min_length=1, max_length=4000)


def semantic_tool_schemas() -> list[dict[str, JsonValue]]:
    """The three tools in OpenAI function shape."""
    limit: dict[str, JsonValue] = {"type": "integer", "description": "Maximum results."}
    return [
        {
            "name": PROFILE_TOOL,
            "description": _PROFILE,
            "parameters": {"type": "object", "properties": {"limit": limit}},
        },
        {
            "name": SEARCH_TOOL,
            "description": _SEARCH,
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in plain words."},
                    "limit": limit,
                },
                "required": ["query"],
            },
        },
        {
            "name": SAVE_TOOL,
            "description": _SAVE,
            "parameters": {
                "type": "object",
                "properties": {"content": {"type": "string", "description": "The fact, one sentence."}},
                "required": ["content"],
            },
        },
    ]
