"""Slot 7: project context files from the working directory.

Discovered in a fixed order — `AGENTS.md`, `SOUL.md` (only when it is not already the
identity), `.cursorrules`, then `.cursor/rules/*.mdc` sorted by name — each rendered as a
`## <relative path>` section. Every file is scanned before it is loaded (the caller passes
the scanner, context scope): a hit replaces the whole file with a `[BLOCKED: ...]` line.
Files longer than the cap keep 70% head and 20% tail with a marker saying what was cut.

Symbolic links are never followed: a cloned repository with `AGENTS.md -> ~/.aws/credentials`
(or a linked `.cursor/rules` directory) would otherwise put a secret into the prompt and the
trace. Such a file is left out and reported as `refused` (the harness warns the user).

This is blocking file I/O: the harness calls it from a worker thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from prompts._text import load_text

__all__ = [
    "MAX_READ_BYTES",
    "ContextFile",
    "discover_context_files",
    "read_text_capped",
    "render_context_files",
    "truncate_middle",
]

MAX_READ_BYTES = 1 << 20
"""Context files and SOUL.md are read up to this many bytes; the prompt keeps far less."""

Scanner = Callable[[str], Sequence[str]]
"""Returns the ids of the threat patterns a text matches (empty: clean)."""


@dataclass(frozen=True, slots=True)
class ContextFile:
    """One loaded context file, as it will appear in the prompt."""

    label: str
    text: str
    blocked: tuple[str, ...] = ()
    truncated_from: int | None = None
    refused: str | None = None
    """Why the file was not read at all (a symbolic link); it is left out of the prompt."""


def truncate_middle(text: str, max_chars: int, *, hint: str) -> tuple[str, bool]:
    """Keep 70% head + 20% tail of an over-long text, with a marker in between."""
    if len(text) <= max_chars:
        return text, False
    head = int(max_chars * 0.7)
    tail = int(max_chars * 0.2)
    cut = len(text) - head - tail
    marker = (
        f"\n\n[... {cut:,} characters omitted from the middle of {hint}; read the file for the rest ...]\n\n"
    )
    return text[:head] + marker + text[len(text) - tail :], True


def read_text_capped(path: Path, limit: int = MAX_READ_BYTES) -> str:
    """A regular file's text, at most `limit` bytes of it; never blocks on a FIFO or device and
    never follows a symbolic link.

    Raises:
        OSError: the path is a symbolic link or not a regular file, or it cannot be read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{str(path)!r} is not a regular file")
        data = os.read(fd, limit)
    finally:
        os.close(fd)
    return data.decode("utf-8-sig", errors="replace")


def _linked(path: Path, cwd: Path) -> bool:
    """Whether `path` or a directory between `cwd` and it is a symbolic link."""
    while path != cwd:
        if path.is_symlink():
            return True
        path = path.parent
    return False


def _candidates(cwd: Path, *, include_soul: bool) -> list[Path]:
    names = ["AGENTS.md"]
    if include_soul:
        names.append("SOUL.md")
    names.append(".cursorrules")
    found = [cwd / n for n in names if (cwd / n).is_symlink() or (cwd / n).is_file()]
    rules = cwd / ".cursor" / "rules"
    if rules.is_dir():
        found.extend(sorted(p for p in rules.glob("*.mdc") if p.is_symlink() or p.is_file()))
    return found


def discover_context_files(
    cwd: Path,
    *,
    scan: Scanner,
    max_chars: int = 20_000,
    include_soul: bool = True,
) -> list[ContextFile]:
    """Read, scan and cap the context files found in `cwd`.

    Unreadable files are skipped (they are optional input; the prompt must still build);
    symbolic links are never followed and come back `refused`.
    """
    files: list[ContextFile] = []
    for path in _candidates(cwd, include_soul=include_soul):
        label = path.relative_to(cwd).as_posix()
        if _linked(path, cwd):
            files.append(ContextFile(label, "", refused="it is a symbolic link (links are never followed)"))
            continue
        try:
            raw = read_text_capped(path)
        except OSError:
            continue
        hits = tuple(scan(raw))
        if hits:
            files.append(ContextFile(label, "", blocked=hits))
            continue
        text, cut = truncate_middle(raw.strip(), max_chars, hint=label)
        files.append(ContextFile(label, text, truncated_from=len(raw) if cut else None))
    return files


def render_context_files(files: Sequence[ContextFile]) -> str:
    """The slot-7 text: a header line and one section per file; empty when there are none."""
    files = [f for f in files if f.refused is None]
    if not files:
        return ""
    sections = [load_text("context_files_header")]
    for f in files:
        if f.blocked:
            body = (
                f"[BLOCKED: {f.label} matched threat pattern(s) {', '.join(f.blocked)}; "
                "its content was not loaded.]"
            )
        else:
            body = f.text
        sections.append(f"## {f.label}\n\n{body}")
    return "\n\n".join(sections)
