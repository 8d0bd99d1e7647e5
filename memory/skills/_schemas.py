"""JSON schemas of the three skill tools, and the pydantic models that validate their arguments.

Tool descriptions are prompt text (`prompts/text/tool_skills_list.md`, `tool_skill_view.md`,
`tool_skill_manage.md`); memory cannot import prompts, so the builders take them as
parameters. Each schema is the provider-neutral `{name, description, parameters}` shape
that the harness wraps into its tool registry.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue

from memory.skills._format import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_TEXT_CHARS

__all__ = [
    "SKILLS_LIST_TOOL_NAME",
    "SKILL_MANAGE_TOOL_NAME",
    "SKILL_TOOL_NAMES",
    "SKILL_VIEW_TOOL_NAME",
    "JsonObject",
    "ManageAction",
    "SkillManageArgs",
    "SkillViewArgs",
    "SkillsListArgs",
    "skill_manage_schema",
    "skill_view_schema",
    "skills_list_schema",
]

JsonObject: TypeAlias = dict[str, JsonValue]
ManageAction: TypeAlias = Literal["create", "patch", "edit", "delete", "write_file", "remove_file"]
SKILLS_LIST_TOOL_NAME: Final = "skills_list"
SKILL_VIEW_TOOL_NAME: Final = "skill_view"
SKILL_MANAGE_TOOL_NAME: Final = "skill_manage"
SKILL_TOOL_NAMES: tuple[str, ...] = (SKILLS_LIST_TOOL_NAME, SKILL_VIEW_TOOL_NAME, SKILL_MANAGE_TOOL_NAME)
"""The skill tools; the harness renders the slot-6 index only when one of them is registered."""
_ACTIONS: list[JsonValue] = ["create", "patch", "edit", "delete", "write_file", "remove_file"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SkillsListArgs(_Args):
    """Arguments of `skills_list`."""

    category: str | None = None


class SkillViewArgs(_Args):
    """Arguments of `skill_view`."""

    name: str
    file_path: str | None = None


class SkillManageArgs(_Args):
    """Arguments of `skill_manage`; which optional ones are required depends on `action`."""

    action: ManageAction
    name: str
    category: str | None = None
    content: str | None = None
    old_string: str | None = None
    new_string: str | None = None
    replace_all: bool = False
    file_path: str | None = None
    file_content: str | None = None


def _schema(name: str, description: str, properties: JsonObject, required: list[JsonValue]) -> JsonObject:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }


def skills_list_schema(description: str) -> JsonObject:
    """The `skills_list` tool schema, with `description` from `prompts/text/tool_skills_list.md`."""
    return _schema(
        SKILLS_LIST_TOOL_NAME,
        description,
        {"category": {"type": "string", "description": "Only list skills in this category."}},
        [],
    )


def skill_view_schema(description: str) -> JsonObject:
    """The `skill_view` tool schema, with `description` from `prompts/text/tool_skill_view.md`."""
    return _schema(
        SKILL_VIEW_TOOL_NAME,
        description,
        {
            "name": {"type": "string", "description": "Skill name, or 'category/name'."},
            "file_path": {
                "type": "string",
                "description": "A supporting file to load instead of SKILL.md, e.g. 'references/api.md'.",
            },
        },
        ["name"],
    )


def skill_manage_schema(description: str) -> JsonObject:
    """The `skill_manage` tool schema, with `description` from `prompts/text/tool_skill_manage.md`."""
    return _schema(
        SKILL_MANAGE_TOOL_NAME,
        description,
        {
            "action": {"type": "string", "enum": _ACTIONS},
            "name": {
                "type": "string",
                "description": f"Skill name: lowercase letters, digits, '.', '_', '-'; at most "
                f"{MAX_NAME_CHARS} characters. 'category/name' also works except for create.",
            },
            "category": {
                "type": "string",
                "description": "create: the category directory (one segment); omit for 'general'. "
                "Other actions: picks the skill when its name exists in several categories.",
            },
            "content": {
                "type": "string",
                "description": "create/edit: the full SKILL.md — '---', YAML with name and description "
                f"(at most {MAX_DESCRIPTION_CHARS} characters), '---', then the body.",
            },
            "old_string": {"type": "string", "description": "patch: exact text to replace (unique)."},
            "new_string": {"type": "string", "description": "patch: replacement text; may be empty."},
            "replace_all": {"type": "boolean", "description": "patch: replace every occurrence."},
            "file_path": {
                "type": "string",
                "description": "patch/write_file/remove_file: a file under references/, templates/, "
                "scripts/ or assets/ (patch defaults to SKILL.md).",
            },
            "file_content": {
                "type": "string",
                "description": f"write_file: the file's full text (at most {MAX_TEXT_CHARS:,} characters).",
            },
        },
        ["action", "name"],
    )
