"""The skills index for system-prompt slot 6: one line per skill, never a skill body.

The harness builds it only when skill tools are registered, and only when the frozen
prefix is built (session start, or a rebuild after compression): a skill written
mid-session is on disk at once but reaches the prompt only at the next rebuild.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import anyio.to_thread

from memory.skills._format import one_line
from memory.skills._library import SkillLibrary
from memory.skills._types import Skill, SkillScan

__all__ = ["load_skills_index", "render_skills_index", "visible_shared"]

_log = logging.getLogger("memory.skills")


def render_skills_index(skills: Iterable[Skill], header: str) -> str:
    """Render the compact, deterministic skills index.

    Args:
        skills: the skills to list (any order; they are sorted by (category, name)).
        header: the heading and instruction line(s), `prompts/text/skills_index.md`
            (memory cannot import prompts, so the harness passes the text in).

    Returns:
        `header`, a blank line, then one `category: name — description` line per skill;
        the empty string when there are no skills (the slot disappears).
    """
    ordered = sorted(skills, key=lambda s: (s.category, s.name))
    if not ordered:
        return ""
    lines = [f"{s.category}: {s.name} — {one_line(s.description)}" for s in ordered]
    return header.rstrip("\n") + "\n\n" + "\n".join(lines)


async def load_skills_index(library: SkillLibrary, header: str, *, shared: SkillLibrary | None = None) -> str:
    """Scan the library from disk (in a worker thread) and render its index.

    Invalid skills and skills the guard blocks for their trust tier are left out, each
    with a warning on the `memory.skills` logger (`skills_list` reports them too). A
    `shared` (read-only) library's skills are listed too, unless one of `library` hides them.
    """
    scan, shared_scan = await anyio.to_thread.run_sync(
        lambda: (library.scan(), None if shared is None else shared.scan())
    )
    for problem in (*scan.problems, *(() if shared_scan is None else shared_scan.problems)):
        # Once per prompt build, so a broken skill is visible in the logs without spamming them.
        _log.warning("skill %s left out of the index (%s): %s", problem.path, problem.problem, problem.reason)
    return render_skills_index([*scan.skills, *visible_shared(scan, shared_scan)], header)


def visible_shared(own: SkillScan, shared: SkillScan | None) -> list[Skill]:
    """The shared library's skills that no skill of the principal's own library hides."""
    if shared is None:
        return []
    taken = {(s.category, s.name) for s in own.skills}
    return [s for s in shared.skills if (s.category, s.name) not in taken]
