"""docs/architecture.md names only paths that exist: the folder map and every path in its prose.

The map (the fenced block of §2) is read as a tree: a name at the start of a line is a folder
(`curated/`) or a module (`runtime.py`) inside the entry one indent level up, and the module
and folder names its description mentions (`_backend.py`, `sim/`) live inside that entry.
Elsewhere a path with a slash and a file ending (`harness/loop/session.py`, `loop/calls.py`)
must exist from the repository root or from one of the three packages. Paths inside a keel
home (`<home>/state.db`) are not the repository's and are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
PACKAGES = ("harness", "memory", "prompts")

# A module, a folder or a glob of files named in the map: `store.py`, `flush/`, `text/*.md`.
_MAP_NAME = re.compile(r"(?<![\w./<>-])([\w*-]+(?:/[\w*.-]+)*(?:\.py|/\*\.md|/))(?![\w/])")
# A path in prose: at least one slash and a file ending; not part of a longer path.
_PROSE_PATH = re.compile(r"(?<![\w./<>-])([\w.-]+(?:/[\w.*-]+)+\.(?:py|md|yaml|toml))\b")


def _exists(path: Path) -> bool:
    if "*" in path.name:
        return any(path.parent.glob(path.name))
    return path.exists()


def _map_lines(text: str) -> list[str]:
    blocks: list[str] = re.findall(r"^```\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    tree = next(b for b in blocks if b.startswith(tuple(f"{p}/" for p in PACKAGES)))
    return tree.splitlines()


def map_paths(lines: list[str]) -> list[str]:
    """Every path the folder map names, relative to the repository root."""
    named: list[str] = []
    parents: list[tuple[int, str]] = []  # (indent, folder) of the entries above this line
    entry = ""  # the folder the current description speaks of
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        head, _, description = line.strip().partition(" ")
        starts_entry = indent < 16 and bool(head)  # descriptions continue in column 16
        if starts_entry:
            while parents and parents[-1][0] >= indent:
                parents.pop()
            base = parents[-1][1] if parents else ""
            path = f"{base}{head}"
            named.append(path)
            entry = path if head.endswith("/") else base
            if head.endswith("/"):
                parents.append((indent, path))
        else:
            description = line.strip()
        named.extend(f"{entry}{name}" for name in _MAP_NAME.findall(description))
    return named


def prose_paths(text: str) -> list[str]:
    """Paths with a slash and a file ending named outside the map (home paths left out)."""
    outside = re.sub(r"^```\n.*?^```$", "", text, flags=re.MULTILINE | re.DOTALL)
    return _PROSE_PATH.findall(outside)


def _resolves(path: str) -> bool:
    return any(_exists(root / path) for root in (REPO, *(REPO / p for p in PACKAGES)))


def test_the_readers_find_what_the_doc_names() -> None:
    # guards on the parsing itself: if these fail, the tests below prove little
    tree = set(map_paths(_map_lines(DOC.read_text(encoding="utf-8"))))
    assert {"prompts/text/*.md", "memory/curated/_backend.py", "memory/sessions/sqlite/"} <= tree
    assert {"memory/providers/holographic/_copy.py", "harness/cachemeter/sim/", "harness/runtime.py"} <= tree
    lines = [
        "memory/",
        "  curated/      the store; _pg.py (rows)",
        "                and tool.py",
        "  _x.py  z",
    ]
    assert map_paths(lines) == [
        "memory/",
        "memory/curated/",
        "memory/curated/_pg.py",
        "memory/curated/tool.py",
        "memory/_x.py",
    ]
    prose = "see `harness/loop/session.py`, loop/calls.py and <home>/memories/MEMORY.md"
    assert prose_paths(prose) == ["harness/loop/session.py", "loop/calls.py"]


def test_every_path_in_the_folder_map_exists() -> None:
    missing = [p for p in map_paths(_map_lines(DOC.read_text(encoding="utf-8"))) if not _exists(REPO / p)]
    assert missing == []


def test_every_path_in_the_prose_exists() -> None:
    missing = [p for p in prose_paths(DOC.read_text(encoding="utf-8")) if not _resolves(p)]
    assert missing == []
