"""`SkillLibrary`: the skills under `<home>/skills/`, found, validated, guarded and loaded.

Layout: `skills/<category>/<name>/SKILL.md`, or `skills/<name>/SKILL.md` for category
`general`; supporting files under `references/`, `templates/`, `scripts/`, `assets/`; an
optional `skills/<category>/DESCRIPTION.md`. Entries whose names start with `.` (the writer
lock, trash from deletes) are never skills.

Trust: each skill gets a tier from the `trust` mapping passed to the constructor, keyed by
`category/name` (`general/<name>` for top-level skills); anything not listed gets
`default_trust` — `agent-created`, since a skill in the home that no one vouched for was most
likely written by the agent. Builtin skills are never scanned; agent-created ones are
scanned only when `guard_agent_created` is on (config `skills.guard_agent_created`).

Every method here blocks (it reads and writes files): async callers run them through
`anyio.to_thread.run_sync`, as the tool handlers and `load_skills_index` do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from memory.errors import (
    SkillBlockedError,
    SkillConflictError,
    SkillError,
    SkillInputError,
    SkillNotFoundError,
)
from memory.skills import _manage
from memory.skills._format import (
    MAX_FILE_BYTES,
    SUPPORT_DIRS,
    category_description,
    check_name,
    parse_skill_md,
)
from memory.skills._fs import read_regular
from memory.skills._guard import blocks, scan_skill
from memory.skills._paths import SKILL_FILE, check_inside, split_ref, support_path
from memory.skills._types import (
    GENERAL,
    Skill,
    SkillCategory,
    SkillChange,
    SkillLocation,
    SkillProblem,
    SkillScan,
    SkillView,
    TrustTier,
)

__all__ = ["SkillLibrary"]

T = TypeVar("T")

_MAX_LISTED_FILES = 200
_DESCRIPTION_FILE = "DESCRIPTION.md"


class SkillLibrary:
    """The skills in one directory tree, with validated, guarded, atomic writes.

    Args:
        root: the skills directory, normally `<home>/skills` (it need not exist yet).
        trust: trust tiers by `category/name`; unlisted skills get `default_trust`.
        default_trust: the tier of skills nobody listed.
        guard_agent_created: scan agent writes (and agent-created skills at load) with the guard.
        lock_timeout_s: how long a write waits for the writer lock `<root>/.skills.lock`.
    """

    def __init__(
        self,
        root: Path,
        *,
        trust: Mapping[str, TrustTier] | None = None,
        default_trust: TrustTier = "agent-created",
        guard_agent_created: bool = True,
        lock_timeout_s: float = 10.0,
    ) -> None:
        self.root = root
        self.guard_agent_created = guard_agent_created
        self.lock_timeout_s = lock_timeout_s
        self._trust = dict(trust or {})
        self._default_trust: TrustTier = default_trust

    # ---------------------------------------------------------------- reading

    def trust_of(self, category: str, name: str) -> TrustTier:
        """The trust tier of `category/name`."""
        return self._trust.get(f"{category}/{name}", self._default_trust)

    def _held(self, work: Callable[[], T], *, change: bool) -> T:
        """Run one library call (`change`: it writes). A tree on disk needs nothing around it;
        a tree kept elsewhere (`_pg.PgSkillLibrary`) brings itself in around the call."""
        return work()

    def scan(self) -> SkillScan:
        """Find every skill, validate and guard it; invalid or blocked ones become problems."""
        return self._held(self._scan, change=False)

    def _scan(self) -> SkillScan:
        locations, problems = self._walk()
        skills: list[Skill] = []
        for loc in locations:
            try:
                skills.append(self._load(loc))
            except SkillBlockedError as exc:
                problems.append(
                    SkillProblem(path=self._rel(loc.directory), problem="blocked", reason=str(exc))
                )
            except SkillError as exc:
                problems.append(
                    SkillProblem(path=self._rel(loc.directory), problem="invalid", reason=str(exc))
                )
        skills.sort(key=lambda s: (s.category, s.name))
        problems.sort(key=lambda p: p.path)
        return SkillScan(skills=tuple(skills), problems=tuple(problems), categories=self._categories(skills))

    def locate(self, ref: str) -> SkillLocation:
        """Find a skill directory by `name` or `category/name` (valid or not).

        Raises:
            SkillInputError: the reference is malformed.
            SkillNotFoundError: nothing matches.
            SkillConflictError: a bare name matches skills in several categories.
        """
        return self._held(lambda: self._locate(ref), change=False)

    def _locate(self, ref: str) -> SkillLocation:
        category, name = split_ref(ref)
        locations, _ = self._walk()
        matches = [
            loc for loc in locations if loc.name == name and (category is None or loc.category == category)
        ]
        if not matches:
            raise SkillNotFoundError(f"no skill named {ref!r}; call skills_list to see the available skills")
        if len(matches) > 1:
            refs = ", ".join(repr(m.ref) for m in matches)
            raise SkillConflictError(f"skill name {name!r} matches {refs}; use 'category/name'")
        return matches[0]

    def view(self, ref: str, file_path: str | None = None) -> SkillView:
        """Load a skill's SKILL.md, or one of its supporting files, for the model.

        Raises:
            SkillError: the reference or path is invalid or escapes the skill, the skill is
                invalid or blocked by the guard for its tier, or the file is not UTF-8 text.
        """
        return self._held(lambda: self._view(ref, file_path), change=False)

    def _view(self, ref: str, file_path: str | None) -> SkillView:
        loc = self.locate(ref)
        skill = self._load(loc)
        if file_path is None or file_path == SKILL_FILE:
            rel, target = SKILL_FILE, loc.directory / SKILL_FILE
        else:
            rel, target = support_path(loc.directory, self.root, file_path, allow_skill_md=True)
        if not target.is_file():
            listed = ", ".join(skill.files) or "none"
            raise SkillNotFoundError(
                f"skill {skill.ref!r} has no file {rel!r}; its supporting files are: {listed}"
            )
        size = target.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SkillInputError(f"{rel!r} is {size:,} bytes; files over 1 MiB are not shown")
        try:
            content = target.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillInputError(
                f"{rel!r} is a binary file of {size:,} bytes; it cannot be shown as text. "
                f"It is at {str(target)!r}"
            ) from exc
        return SkillView(skill=skill, file=rel, content=content)

    # ---------------------------------------------------------------- writing (see _manage)

    def create(self, name: str, content: str, *, category: str | None = None) -> SkillChange:
        """Create `[category/]name/SKILL.md`; category None or `general` means the top level."""
        return self._held(lambda: _manage.create(self, name, content, category=category), change=True)

    def edit(self, ref: str, content: str) -> SkillChange:
        """Rewrite a skill's SKILL.md completely."""
        return self._held(lambda: _manage.edit(self, ref, content), change=True)

    def patch(
        self,
        ref: str,
        old_string: str,
        new_string: str,
        *,
        file_path: str | None = None,
        replace_all: bool = False,
    ) -> SkillChange:
        """Replace a unique `old_string` (or every one, with `replace_all`) in SKILL.md or a file."""
        return self._held(
            lambda: _manage.patch(
                self, ref, old_string, new_string, file_path=file_path, replace_all=replace_all
            ),
            change=True,
        )

    def delete(self, ref: str) -> SkillChange:
        """Delete a skill directory (and its category directory if that becomes empty)."""
        return self._held(lambda: _manage.delete(self, ref), change=True)

    def write_file(self, ref: str, file_path: str, content: str) -> SkillChange:
        """Create or overwrite a supporting file under references/, templates/, scripts/ or assets/."""
        return self._held(lambda: _manage.write_file(self, ref, file_path, content), change=True)

    def remove_file(self, ref: str, file_path: str) -> SkillChange:
        """Remove a supporting file (and any directories it leaves empty)."""
        return self._held(lambda: _manage.remove_file(self, ref, file_path), change=True)

    # ---------------------------------------------------------------- internals

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def _walk(self) -> tuple[list[SkillLocation], list[SkillProblem]]:
        """Every directory holding a SKILL.md, sorted; names that break the rules are problems."""
        found: list[SkillLocation] = []
        problems: list[SkillProblem] = []
        if not self.root.is_dir():
            return found, problems
        seen: set[tuple[str, str]] = set()

        def add(category: str, directory: Path) -> None:
            rel = self._rel(directory)
            try:
                check_name(directory.name)
                check_inside(directory, self.root, what=f"skill directory {rel!r}")
            except SkillInputError as exc:
                problems.append(SkillProblem(path=rel, problem="invalid", reason=str(exc)))
                return
            if (category, directory.name) in seen:
                problems.append(
                    SkillProblem(
                        path=rel,
                        problem="duplicate",
                        reason=f"{rel!r} repeats the top-level skill {directory.name!r}; "
                        "merge the two and delete one",
                    )
                )
                return
            seen.add((category, directory.name))
            found.append(SkillLocation(category=category, name=directory.name, directory=directory))

        for child in _subdirs(self.root):
            if (child / SKILL_FILE).exists():
                add(GENERAL, child)
                continue
            try:
                check_name(child.name, what="category")
                check_inside(child, self.root, what=f"category directory {child.name!r}")
            except SkillInputError as exc:
                problems.append(SkillProblem(path=child.name, problem="invalid", reason=str(exc)))
                continue
            for sub in _subdirs(child):
                if (sub / SKILL_FILE).exists():
                    add(child.name, sub)
                else:
                    problems.append(
                        SkillProblem(
                            path=self._rel(sub),
                            problem="invalid",
                            reason="directory has no SKILL.md (categories are one level deep); "
                            "add a SKILL.md or move it",
                        )
                    )
        return found, problems

    def _load(self, loc: SkillLocation) -> Skill:
        """Parse and guard one skill. Raises SkillInputError / SkillBlockedError."""
        skill_md = loc.directory / SKILL_FILE
        check_inside(skill_md, loc.directory, what=f"{loc.ref}/SKILL.md")
        if not skill_md.is_file():
            raise SkillInputError(f"{loc.ref}/SKILL.md is not a regular file; replace it with one")
        size = skill_md.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SkillInputError(f"{loc.ref}/SKILL.md is {size:,} bytes; the limit is 1 MiB")
        try:
            text = skill_md.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillInputError(f"{loc.ref}/SKILL.md is not UTF-8 text; re-save it as UTF-8") from exc
        try:
            doc = parse_skill_md(text, expected_name=loc.name)
        except SkillInputError as exc:
            raise SkillInputError(
                f"skill {loc.ref!r} is invalid: {exc}. Fix it with skill_manage(action='edit')"
            ) from exc
        tier = self.trust_of(loc.category, loc.name)
        if self._scans(tier):
            report = scan_skill(loc.directory)
            if blocks(tier, report.verdict):
                worst = report.findings[0]
                raise SkillBlockedError(
                    f"skill {loc.ref!r} (trust {tier!r}) is blocked by the security guard: verdict "
                    f"{report.verdict!r}, {len(report.findings)} finding(s), first {worst.id!r} in "
                    f"{worst.file}:{worst.line}. Review the files and remove the flagged content",
                    report=report,
                )
        return Skill(
            name=loc.name,
            category=loc.category,
            description=doc.description,
            directory=loc.directory,
            files=_supporting_files(loc.directory),
            trust=tier,
        )

    def _scans(self, tier: TrustTier) -> bool:
        if tier == "builtin":
            return False
        return tier != "agent-created" or self.guard_agent_created

    def _categories(self, skills: list[Skill]) -> tuple[SkillCategory, ...]:
        counts: dict[str, int] = {}
        for skill in skills:
            counts[skill.category] = counts.get(skill.category, 0) + 1
        out: list[SkillCategory] = []
        for name in sorted(counts):
            description = _category_description(self.root / name / _DESCRIPTION_FILE)
            out.append(SkillCategory(name=name, description=description, count=counts[name]))
        return tuple(out)


def _category_description(path: Path) -> str | None:
    """A category's description, read only from a regular file inside the category.

    A symlinked DESCRIPTION.md could point at any file on the machine and put its first
    line in the skills index (the system prompt); a FIFO would block the reader. Either is
    simply ignored, like an unreadable or non-UTF-8 one.
    """
    try:
        data = read_regular(path, max_bytes=MAX_FILE_BYTES + 1)
    except OSError:
        return None  # missing, unreadable, a symlink, FIFO or device: no description
    if len(data) > MAX_FILE_BYTES:
        return None
    try:
        return category_description(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def _subdirs(directory: Path) -> list[Path]:
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return []
    return [c for c in children if not c.name.startswith(".") and c.is_dir()]


def _supporting_files(directory: Path) -> tuple[str, ...]:
    """Regular files under the allowed subdirectories, sorted; hidden ones and escapes skipped."""
    files: list[str] = []
    base = directory.resolve()
    for sub in SUPPORT_DIRS:
        top = directory / sub
        if top.is_symlink() or not top.is_dir():
            continue  # a symlinked subdirectory could point anywhere
        # os.walk does not follow directory symlinks, so loops cannot trap the listing.
        for current, dirs, names in os.walk(top, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                path = Path(current) / name
                if name.startswith(".") or not path.is_file() or not path.resolve().is_relative_to(base):
                    continue
                files.append(path.relative_to(directory).as_posix())
        if len(files) >= _MAX_LISTED_FILES:
            break
    return tuple(sorted(files)[:_MAX_LISTED_FILES])
