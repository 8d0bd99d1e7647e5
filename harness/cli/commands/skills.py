"""`keel skills list|show|path`: inspect the principal's skill library (`<home>/skills` by default,
or the `skill_files` rows of `storage.backend: postgres`, read through the configured backend)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread
from rich.table import Table
from rich.text import Text

from harness.cli._common import Subparsers, console, principal_from_args, verb_parsers
from harness.errors import CommandError
from harness.wiring.scoped import shared_skill_library, skill_library
from harness.wiring.stores import open_place
from memory.skills import SkillBlockedError, SkillError, SkillLibrary, SkillNotFoundError, visible_shared

__all__ = ["register"]


T = TypeVar("T")


def _with_libraries(args: argparse.Namespace, work: Callable[[SkillLibrary, SkillLibrary | None], T]) -> T:
    """Run `work` on the principal's library and the shared workspace's (read-only, if the
    config names one), opened on the configured backend; the reads block, so in a thread."""
    cfg, principal = principal_from_args(args)
    home = cfg.resolved_home(os.environ)

    async def main() -> T:
        async with open_place(cfg, home) as place:
            library = skill_library(cfg, home, principal, stores=place)
            shared = shared_skill_library(cfg, home, principal, stores=place)
            return await anyio.to_thread.run_sync(work, library, shared)  # blocking: files or rows

    return anyio.run(main)


def _list(args: argparse.Namespace) -> int:
    return _with_libraries(args, _print_list)


def _print_list(library: SkillLibrary, shared: SkillLibrary | None) -> int:
    scan = library.scan()
    shared_scan = None if shared is None else shared.scan()
    visible = [] if shared_scan is None else visible_shared(scan, shared_scan)
    if not scan.skills and not scan.problems and not visible:
        console.print(f"no skills yet in {str(library.root)!r}")
        return 0
    if scan.skills or visible:
        table = Table("category", "name", "description", "files")
        for skill in scan.skills:
            # Text(), not str: a description with [brackets] must not be read as rich markup.
            table.add_row(skill.category, skill.name, Text(skill.description), str(len(skill.files)))
        for skill in visible:
            table.add_row(
                skill.category, Text(f"{skill.name} (shared)"), Text(skill.description), str(len(skill.files))
            )
        console.print(table)
    for problem in scan.problems:
        console.print(f"skipped {problem.path} ({problem.problem}): {problem.reason}", markup=False)
    return 0


def _show(args: argparse.Namespace) -> int:
    return _with_libraries(args, lambda library, shared: _print_view(args, library, shared))


def _print_view(args: argparse.Namespace, library: SkillLibrary, shared: SkillLibrary | None) -> int:
    try:
        try:
            view = library.view(args.name, args.file)
        except SkillNotFoundError:
            if shared is None:
                raise
            library = shared
            view = shared.view(args.name, args.file)
    except SkillBlockedError as exc:
        raise CommandError(f"{exc}; the files are under {str(library.root)!r}") from exc
    except SkillError as exc:
        raise CommandError(f"{exc} (`keel skills list` shows what exists)") from exc
    # Written raw, not through rich: the exact text matters more than colour here.
    sys.stdout.write(view.content if view.content.endswith("\n") else view.content + "\n")
    return 0


def _path(args: argparse.Namespace) -> int:
    cfg, principal = principal_from_args(args)
    if cfg.storage.backend == "files":
        root = str(skill_library(cfg, cfg.resolved_home(os.environ), principal).root)
    else:
        home = cfg.resolved_home(os.environ)
        root = f"PostgreSQL rows (table skill_files) on {cfg.sessions.location(home)}, mirrored under {home / 'cache'}"
    console.print(root, markup=False, soft_wrap=True)
    return 0


def register(sub: Subparsers) -> None:
    verbs = verb_parsers(sub, "skills")
    listing = verbs.add_parser("list", help="table of skills (category, name, description, files)")
    listing.set_defaults(handler=_list)
    show = verbs.add_parser("show", help="print a skill's SKILL.md (or one supporting file)")
    show.add_argument("name", metavar="NAME", help="skill name or category/name")
    show.add_argument("--file", metavar="PATH", help="a supporting file, e.g. references/notes.md")
    show.set_defaults(handler=_show)
    path = verbs.add_parser("path", help="print the skills directory")
    path.set_defaults(handler=_path)
