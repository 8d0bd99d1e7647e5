"""The writes behind `skill_manage`: validated, serialized, atomic, guarded, and undone when blocked.

Each write validates its input first (names, paths, sizes, the resulting SKILL.md), then
takes the writer lock `<root>/.skills.lock`, re-locates the skill under the lock, snapshots
exactly what it will change, writes atomically, and — when agent writes are guarded — scans
the whole skill. A *dangerous* verdict undoes the write to the exact previous bytes (create
removes the new directory, edit/patch restore the file, write_file restores or deletes it)
and raises `SkillBlockedError`. A failed write is undone the same way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import filelock

from memory.errors import (
    SkillBlockedError,
    SkillConflictError,
    SkillInputError,
    SkillNotFoundError,
    SkillStorageError,
)
from memory.skills._format import MAX_FILE_BYTES, check_name, encode_text, parse_skill_md
from memory.skills._fs import (
    FileSnapshot,
    NotRegularFileError,
    atomic_write,
    fsync_dir,
    read_regular,
    remove_tree,
    restore,
    snapshot,
)
from memory.skills._guard import GuardReport, blocks, scan_skill
from memory.skills._paths import SKILL_FILE, check_inside, support_path
from memory.skills._types import GENERAL, SkillChange, SkillLocation

if TYPE_CHECKING:
    from memory.skills._library import SkillLibrary

__all__ = ["create", "delete", "edit", "patch", "remove_file", "write_file"]

_LOCK_FILE = ".skills.lock"
_PREVIEW_CHARS = 500
_SHOWN_FINDINGS = 5


def create(lib: SkillLibrary, name: str, content: str, *, category: str | None) -> SkillChange:
    check_name(name)
    cat = GENERAL if category is None or category == GENERAL else check_name(category, what="category")
    data = encode_text(content, what="SKILL.md")
    parse_skill_md(content, expected_name=name)
    with _writer_lock(lib, create_root=True):
        clash = [loc for loc in lib._walk()[0] if loc.name == name]
        if clash:
            raise SkillConflictError(
                f"a skill named {name!r} already exists ({clash[0].ref!r}); change it with "
                "action='patch' or 'edit', or choose another name"
            )
        parent = lib.root if cat == GENERAL else lib.root / cat
        target = parent / name
        if os.path.lexists(target):
            raise SkillConflictError(
                f"{_rel(lib, target)!r} already exists and is not a skill; choose another name"
            )
        if cat != GENERAL and os.path.lexists(parent):
            if not parent.is_dir() or (parent / SKILL_FILE).exists():
                raise SkillConflictError(
                    f"category {cat!r} is already the name of a top-level skill or file; choose another"
                )
            check_inside(parent, lib.root, what=f"category directory {cat!r}")
        made_parent = not os.path.lexists(parent)

        def write() -> None:
            if made_parent:
                parent.mkdir()
                fsync_dir(lib.root)
            target.mkdir()
            fsync_dir(parent)
            atomic_write(target / SKILL_FILE, data)

        def rollback() -> None:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
                fsync_dir(parent)
            if made_parent and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                fsync_dir(lib.root)

        report = _apply(lib, target, write, rollback)
    return SkillChange(
        action="create", ref=f"{cat}/{name}", path=_rel(lib, target / SKILL_FILE), report=report
    )


def edit(lib: SkillLibrary, ref: str, content: str) -> SkillChange:
    data = encode_text(content, what="SKILL.md")
    with _writer_lock(lib):
        loc = _locate(lib, ref)
        parse_skill_md(content, expected_name=loc.name)
        path = _writable(loc, SKILL_FILE, loc.directory / SKILL_FILE)
        snap = _snapshot(path.name, path)
        report = _apply(lib, loc.directory, lambda: atomic_write(path, data), lambda: restore(snap))
    return SkillChange(action="edit", ref=loc.ref, path=_rel(lib, path), report=report)


def patch(
    lib: SkillLibrary,
    ref: str,
    old_string: str,
    new_string: str,
    *,
    file_path: str | None,
    replace_all: bool,
) -> SkillChange:
    if not old_string:
        raise SkillInputError("old_string is empty; give the exact text to replace")
    with _writer_lock(lib):
        loc = _locate(lib, ref)
        rel, path = support_path(loc.directory, lib.root, file_path or SKILL_FILE, allow_skill_md=True)
        if not path.is_file():
            raise SkillNotFoundError(f"skill {loc.ref!r} has no file {rel!r}; use action='write_file' first")
        path = _writable(loc, rel, path)
        text = _read_text(path, rel)
        count = text.count(old_string)
        if count == 0:
            raise SkillInputError(
                f"old_string was not found in {rel!r}; copy the exact text from skill_view "
                f"(whitespace and line breaks matter). The file begins: {text[:_PREVIEW_CHARS]!r}"
            )
        if count > 1 and not replace_all:
            raise SkillInputError(
                f"old_string matches {count} places in {rel!r}; include more surrounding text to "
                "make it unique, or set replace_all=true"
            )
        updated = (
            text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
        )
        data = encode_text(updated, what=rel)
        if rel == SKILL_FILE:
            parse_skill_md(updated, expected_name=loc.name)
        snap = _snapshot(path.name, path)
        report = _apply(lib, loc.directory, lambda: atomic_write(path, data), lambda: restore(snap))
    return SkillChange(
        action="patch",
        ref=loc.ref,
        path=_rel(lib, path),
        replacements=count if replace_all else 1,
        report=report,
    )


def delete(lib: SkillLibrary, ref: str) -> SkillChange:
    with _writer_lock(lib):
        loc = _locate(lib, ref)
        if loc.directory.is_symlink():
            raise SkillInputError(
                f"skill directory {loc.ref!r} is a symlink; remove the link by hand if you mean it"
            )
        parent = loc.directory.parent
        try:
            remove_tree(loc.directory, trash_parent=lib.root)
            if parent != lib.root and not any(parent.iterdir()):
                parent.rmdir()
                fsync_dir(lib.root)
        except OSError as exc:
            raise SkillStorageError(f"deleting {loc.ref!r} failed: {exc}") from exc
    return SkillChange(action="delete", ref=loc.ref, path=_rel(lib, loc.directory))


def write_file(lib: SkillLibrary, ref: str, file_path: str, content: str) -> SkillChange:
    data = encode_text(content, what=f"file {file_path[:120]!r}")
    with _writer_lock(lib):
        loc = _locate(lib, ref)
        rel, path = support_path(loc.directory, lib.root, file_path, allow_skill_md=False)
        if path.is_dir():
            raise SkillInputError(f"{rel!r} is a directory; give a file path inside it")
        path = _writable(loc, rel, path)
        missing: list[Path] = []
        ancestor = path.parent
        while not os.path.lexists(ancestor):
            missing.append(ancestor)
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise SkillInputError(f"{_rel(lib, ancestor)!r} is a file, not a directory; remove it first")
        missing.reverse()
        snap = _snapshot(path.name, path)

        def write() -> None:
            for directory in missing:
                directory.mkdir()
                fsync_dir(directory.parent)
            atomic_write(path, data)

        def rollback() -> None:
            restore(snap)
            for directory in reversed(missing):
                if directory.is_dir() and not any(directory.iterdir()):
                    directory.rmdir()
                    fsync_dir(directory.parent)

        report = _apply(lib, loc.directory, write, rollback)
    return SkillChange(action="write_file", ref=loc.ref, path=_rel(lib, path), report=report)


def remove_file(lib: SkillLibrary, ref: str, file_path: str) -> SkillChange:
    with _writer_lock(lib):
        loc = _locate(lib, ref)
        rel, path = support_path(loc.directory, lib.root, file_path, allow_skill_md=False)
        if path.is_dir() and not path.is_symlink():
            raise SkillInputError(f"{rel!r} is a directory; remove the files in it one by one")
        if not os.path.lexists(path):
            listed = ", ".join(_listing(loc)) or "none"
            raise SkillNotFoundError(
                f"skill {loc.ref!r} has no file {rel!r}; its supporting files are: {listed}"
            )
        try:
            path.unlink()
            fsync_dir(path.parent)
            directory = path.parent
            while directory != loc.directory and not any(directory.iterdir()):
                directory.rmdir()
                fsync_dir(directory.parent)
                directory = directory.parent
        except OSError as exc:
            raise SkillStorageError(f"removing {rel!r} from {loc.ref!r} failed: {exc}") from exc
    return SkillChange(action="remove_file", ref=loc.ref, path=_rel(lib, path))


# -------------------------------------------------------------------- helpers


@contextlib.contextmanager
def _writer_lock(lib: SkillLibrary, *, create_root: bool = False) -> Iterator[None]:
    """Serialize writers across threads and processes with `<root>/.skills.lock`."""
    if create_root:
        try:
            lib.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SkillStorageError(f"cannot create the skills directory {str(lib.root)!r}: {exc}") from exc
    elif not lib.root.is_dir():
        raise SkillNotFoundError("there are no skills yet; create one with action='create'")
    lock = filelock.FileLock(str(lib.root / _LOCK_FILE), timeout=lib.lock_timeout_s)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise SkillStorageError(
            f"another writer has held the skills lock for {lib.lock_timeout_s}s; try again shortly"
        ) from exc
    except OSError as exc:
        raise SkillStorageError(f"cannot take the skills lock in {str(lib.root)!r}: {exc}") from exc
    try:
        yield
    finally:
        lock.release()


def _locate(lib: SkillLibrary, ref: str) -> SkillLocation:
    loc = lib.locate(ref)
    if loc.directory.is_symlink():
        raise SkillInputError(
            f"skill directory {loc.ref!r} is a symlink; skills written by tools must be real"
        )
    check_inside(loc.directory, lib.root, what=f"skill directory {loc.ref!r}")
    return loc


def _writable(loc: SkillLocation, rel: str, path: Path) -> Path:
    if path.is_symlink():
        raise SkillInputError(f"{rel!r} in {loc.ref!r} is a symlink; write to a regular file instead")
    return path


def _snapshot(rel: str, path: Path) -> FileSnapshot:
    try:
        return snapshot(path)
    except NotRegularFileError as exc:
        raise SkillInputError(f"{rel!r} cannot be replaced: {exc}; remove it first") from exc


def _read_text(path: Path, rel: str) -> str:
    try:
        data = read_regular(path, max_bytes=MAX_FILE_BYTES + 1)
    except NotRegularFileError as exc:
        raise SkillInputError(f"{rel!r} cannot be patched: {exc}; replace it with a regular file") from exc
    if len(data) > MAX_FILE_BYTES:
        raise SkillInputError(f"{rel!r} is over 1 MiB; files over 1 MiB cannot be patched")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillInputError(f"{rel!r} is not UTF-8 text; replace it with action='write_file'") from exc


def _apply(
    lib: SkillLibrary, directory: Path, write: Callable[[], None], rollback: Callable[[], None]
) -> GuardReport | None:
    """Run `write`; undo it when it fails or when the guard finds the skill dangerous."""
    try:
        write()
    except OSError as exc:
        _undo(rollback, f"the write failed ({exc})")
        raise SkillStorageError(f"the write failed and was undone: {exc}") from exc
    if not lib.guard_agent_created:
        return None
    try:
        report = scan_skill(directory)
    except OSError as exc:
        _undo(rollback, f"the guard could not read the skill ({exc})")
        raise SkillStorageError(
            f"the guard could not read the skill, so the write was undone: {exc}"
        ) from exc
    if blocks("agent-created", report.verdict):
        _undo(rollback, "the guard blocked the write")
        raise SkillBlockedError(_blocked_message(report), report=report)
    return report


def _undo(rollback: Callable[[], None], why: str) -> None:
    try:
        rollback()
    except OSError as exc:
        raise SkillStorageError(
            f"{why}, and undoing it failed: {exc}; check the skill directory by hand"
        ) from exc


def _blocked_message(report: GuardReport) -> str:
    serious = [f for f in report.findings if f.severity in ("critical", "high")]
    shown = "; ".join(
        f"{f.id} ({f.severity}, {f.category}) in {f.file} line {f.line}: {f.match!r}"
        for f in serious[:_SHOWN_FINDINGS]
    )
    more = f"; and {len(serious) - _SHOWN_FINDINGS} more" if len(serious) > _SHOWN_FINDINGS else ""
    return (
        f"the security guard refused this write as dangerous — {shown}{more}. Nothing was changed; "
        "remove the flagged content and try again"
    )


def _listing(loc: SkillLocation) -> list[str]:
    out: list[str] = []
    for current, dirs, names in os.walk(loc.directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out.extend(
            (Path(current) / n).relative_to(loc.directory).as_posix()
            for n in sorted(names)
            if not n.startswith(".") and n != SKILL_FILE
        )
    return out[:50]


def _rel(lib: SkillLibrary, path: Path) -> str:
    return path.relative_to(lib.root).as_posix()
