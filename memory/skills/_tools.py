"""The skill tool handlers: `skills_list`, `skill_view`, `skill_manage`.

Each handler takes the model's arguments (a parsed JSON object, or the raw JSON text of
one), validates them with pydantic, runs the blocking library call in a worker thread, and
returns a compact JSON string with `success`. Bad input from the model never raises: it
becomes `{"success": false, "error": ...}` that names the fix. Cancellation propagates.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import anyio.to_thread
from pydantic import BaseModel, JsonValue, ValidationError

from memory.errors import SkillBlockedError, SkillError, SkillInputError, SkillNotFoundError
from memory.skills._format import check_name
from memory.skills._guard import GuardFinding, GuardReport
from memory.skills._index import visible_shared
from memory.skills._library import SkillLibrary
from memory.skills._schemas import (
    SKILL_MANAGE_TOOL_NAME,
    SKILL_VIEW_TOOL_NAME,
    SKILLS_LIST_TOOL_NAME,
    JsonObject,
    SkillManageArgs,
    SkillsListArgs,
    SkillViewArgs,
)
from memory.skills._types import SkillCategory, SkillChange, SkillScan

__all__ = ["SkillManageTool", "SkillViewTool", "SkillsListTool"]

_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)
_SHOWN_FINDINGS = 10
_CREATE_HINT = (
    "Created. Add supporting files with action='write_file' under references/, templates/, scripts/ "
    "or assets/. The skills list in the system prompt updates from the next session on."
)


class SkillsListTool:
    """`skills_list(category?)`: every valid skill with its description, plus problems on disk.

    Args:
        library: the skill library to list.
        shared: a read-only library listed too (a shared workspace's); a skill of `library`
            with the same category and name hides the shared one.
    """

    name: Final = SKILLS_LIST_TOOL_NAME

    def __init__(self, library: SkillLibrary, *, shared: SkillLibrary | None = None) -> None:
        self._library = library
        self._shared = shared

    async def __call__(self, arguments: JsonValue) -> str:
        """Run the tool; `arguments` is a JSON object or its raw JSON text."""
        return await _guarded(self.name, arguments, SkillsListArgs, self._run)

    async def _run(self, args: SkillsListArgs) -> JsonObject:
        if args.category is not None:
            check_name(args.category, what="category")
        scan, shared_scan = await anyio.to_thread.run_sync(
            lambda: (self._library.scan(), None if self._shared is None else self._shared.scan())
        )
        own = [s for s in scan.skills if args.category is None or s.category == args.category]
        shared = [
            s
            for s in visible_shared(scan, shared_scan)
            if args.category is None or s.category == args.category
        ]
        skills = [*own, *shared]
        listed: list[JsonValue] = [
            {"name": s.name, "category": s.category, "description": s.description, "files": len(s.files)}
            for s in own
        ]
        listed += [
            {
                "name": s.name,
                "category": s.category,
                "description": s.description,
                "files": len(s.files),
                "shared": True,
            }
            for s in shared
        ]
        reply: JsonObject = {
            "success": True,
            "count": len(skills),
            "skills": listed,
            "categories": [
                {"name": c.name, "description": c.description, "count": c.count}
                if c.description
                else {"name": c.name, "count": c.count}
                for c in _merged_categories(scan, shared_scan)
            ],
        }
        if scan.problems:
            reply["problems"] = [
                {"path": p.path, "problem": p.problem, "reason": p.reason} for p in scan.problems
            ]
        reply["hint"] = (
            "Load a skill with skill_view(name) before following it."
            if skills
            else "No skills match. Save a reusable procedure with skill_manage(action='create')."
        )
        return reply


class SkillViewTool:
    """`skill_view(name, file_path?)`: a skill's SKILL.md, or one of its supporting files.

    Args:
        library: the skill library to read.
        shared: a read-only library read when `library` has no such skill.
    """

    name: Final = SKILL_VIEW_TOOL_NAME

    def __init__(self, library: SkillLibrary, *, shared: SkillLibrary | None = None) -> None:
        self._library = library
        self._shared = shared

    async def __call__(self, arguments: JsonValue) -> str:
        """Run the tool; `arguments` is a JSON object or its raw JSON text."""
        return await _guarded(self.name, arguments, SkillViewArgs, self._run)

    async def _run(self, args: SkillViewArgs) -> JsonObject:
        shared = False
        try:
            view = await anyio.to_thread.run_sync(
                functools.partial(self._library.view, args.name, args.file_path)
            )
        except SkillNotFoundError:
            if self._shared is None:
                raise
            view = await anyio.to_thread.run_sync(
                functools.partial(self._shared.view, args.name, args.file_path)
            )
            shared = True
        reply: JsonObject = {
            "success": True,
            "name": view.skill.name,
            "category": view.skill.category,
            "file": view.file,
            "content": view.content,
            "files": list(view.skill.files),
            "directory": str(view.skill.directory),
        }
        if shared:
            reply["shared"] = True
            reply["note"] = (
                "This skill belongs to the shared workspace: read it, but it cannot be changed from here."
            )
        return reply


class SkillManageTool:
    """`skill_manage(action, name, ...)`: create, patch, edit, delete, write_file, remove_file.

    Writes are `agent-created`: with the library's `guard_agent_created` on, a write the
    guard finds dangerous is undone and refused with the findings, so the model can retry
    without the flagged content.

    Args:
        library: the skill library to change.
        shared: a read-only library: changing one of its skills is refused with a clear error.
    """

    name: Final = SKILL_MANAGE_TOOL_NAME

    def __init__(self, library: SkillLibrary, *, shared: SkillLibrary | None = None) -> None:
        self._library = library
        self._shared = shared

    async def __call__(self, arguments: JsonValue) -> str:
        """Run the tool; `arguments` is a JSON object or its raw JSON text."""
        return await _guarded(self.name, arguments, SkillManageArgs, self._run)

    async def _run(self, args: SkillManageArgs) -> JsonObject:
        try:
            change = await anyio.to_thread.run_sync(self._operation(args))
        except SkillNotFoundError as exc:
            if self._shared is not None and await anyio.to_thread.run_sync(self._in_shared, args.name):
                raise SkillInputError(
                    f"skill {args.name!r} belongs to the shared workspace and is read-only here; "
                    "create a skill of your own instead (action='create'), which takes precedence"
                ) from exc
            raise
        reply: JsonObject = {
            "success": True,
            "action": change.action,
            "skill": change.ref,
            "path": change.path,
        }
        if change.replacements is not None:
            reply["replacements"] = change.replacements
        if change.report is not None and change.report.findings:
            reply["guard"] = {"verdict": change.report.verdict, "findings": _findings(change.report)}
        if change.action == "create":
            reply["hint"] = _CREATE_HINT
        return reply

    def _in_shared(self, ref: str) -> bool:
        assert self._shared is not None
        try:
            self._shared.view(ref)
        except SkillError:
            return False
        return True

    def _operation(self, args: SkillManageArgs) -> Callable[[], SkillChange]:
        lib = self._library
        ref = args.name
        if args.action != "create" and args.category is not None and "/" not in ref:
            ref = f"{args.category}/{ref}"
        match args.action:
            case "create":
                content = _need(args.content, "create", "content", "the full SKILL.md text")
                return functools.partial(lib.create, args.name, content, category=args.category)
            case "edit":
                content = _need(args.content, "edit", "content", "the full new SKILL.md text")
                return functools.partial(lib.edit, ref, content)
            case "patch":
                old = _need(args.old_string, "patch", "old_string", "the exact text to replace")
                new = _need(args.new_string, "patch", "new_string", "the replacement, '' to delete")
                return functools.partial(
                    lib.patch, ref, old, new, file_path=args.file_path, replace_all=args.replace_all
                )
            case "delete":
                return functools.partial(lib.delete, ref)
            case "write_file":
                path = _need(args.file_path, "write_file", "file_path", "e.g. 'references/notes.md'")
                text = _need(args.file_content, "write_file", "file_content", "the file's full text")
                return functools.partial(lib.write_file, ref, path, text)
            case "remove_file":
                path = _need(args.file_path, "remove_file", "file_path", "the file to remove")
                return functools.partial(lib.remove_file, ref, path)


# -------------------------------------------------------------------- shared plumbing


def _merged_categories(own: SkillScan, shared: SkillScan | None) -> list[SkillCategory]:
    if shared is None:
        return list(own.categories)
    merged = {c.name: c for c in own.categories}
    for c in shared.categories:
        mine = merged.get(c.name)
        merged[c.name] = (
            c
            if mine is None
            else SkillCategory(
                name=c.name, description=mine.description or c.description, count=mine.count + c.count
            )
        )
    return [merged[name] for name in sorted(merged)]


async def _guarded(
    tool: str,
    arguments: JsonValue,
    model: type[_M],
    run: Callable[[_M], Awaitable[JsonObject]],
) -> str:
    """Parse, validate and run; turn every expected failure into a JSON error reply."""
    try:
        args = _parse(tool, arguments, model)
        return _dumps(await run(args))
    except SkillBlockedError as exc:
        return _dumps({"success": False, "error": str(exc), "findings": _findings(exc.report)})
    except SkillError as exc:
        return _dumps({"success": False, "error": str(exc)})
    except (OSError, ValueError) as exc:
        # The disk refused (permissions, a vanished file) or a value the OS cannot take.
        return _dumps({"success": False, "error": f"{tool} failed: {exc}"})


def _parse(tool: str, arguments: JsonValue, model: type[_M]) -> _M:
    if isinstance(arguments, str):
        if not arguments.strip():
            arguments = {}
        else:
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                raise SkillInputError(
                    f"{tool} arguments are not valid JSON ({exc}); send a JSON object"
                ) from exc
    if not isinstance(arguments, dict):
        raise SkillInputError(f"{tool} arguments must be a JSON object, got {type(arguments).__name__}")
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise SkillInputError(_validation_message(tool, exc, model)) from exc


def _validation_message(tool: str, exc: ValidationError, model: type[BaseModel]) -> str:
    parts: list[str] = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(model.model_fields)
            parts.append(f"{where!r} is not an argument (allowed: {allowed})")
        elif err["type"] == "missing":
            parts.append(f"{where!r} is required")
        else:
            parts.append(f"{where!r}: {err['msg']}")
    return f"{tool} arguments are invalid: " + "; ".join(parts)


def _need(value: _T | None, action: str, field: str, what: str) -> _T:
    if value is None:
        raise SkillInputError(f"action={action!r} needs {field!r} ({what})")
    return value


def _findings(report: GuardReport) -> list[JsonValue]:
    return [_finding(f) for f in report.findings[:_SHOWN_FINDINGS]]


def _finding(f: GuardFinding) -> JsonValue:
    return {
        "id": f.id,
        "severity": f.severity,
        "category": f.category,
        "file": f.file,
        "line": f.line,
        "match": f.match,
    }


def _dumps(reply: JsonObject) -> str:
    text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # An unpaired surrogate slipped into a message: escape everything rather than emit
        # a string the transport cannot encode.
        text = json.dumps(reply, ensure_ascii=True, separators=(",", ":"))
    return text
