"""Who a session runs for, and where that principal's memory lives in the keel home.

A `Principal` is a `user_id` (their USER.md and their episodic sessions) and a `workspace`
(its MEMORY.md and skills); both are optional. The layout, with `<home>` the keel home:

| principal | USER.md | MEMORY.md, skills | sessions (user id in the store) |
|---|---|---|---|
| neither (today's single user) | `<home>/memories/` | `<home>/memories/`, `<home>/skills/` | `""` |
| user `u` | `<home>/users/u/memories/` | `<home>/users/u/memories/`, `<home>/users/u/skills/` | `"u"` |
| workspace `w` | `<home>/memories/` | `<home>/workspaces/w/memories/`, `<home>/workspaces/w/skills/` | `""` |
| user `u`, workspace `w` | `<home>/users/u/memories/` | `<home>/workspaces/w/memories/`, `.../w/skills/` | `"u"` |

So the default principal sees exactly what a home laid out before scopes holds, and a user
without a workspace keeps the files where `memory.user_id` always put them (both curated
files under `<home>/users/u/memories/`): a user works in a private workspace of their own
unless a shared one is named. Per-user provider data (the holographic fact database) goes
under the user's directory, traces under `<traces>/users/u/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory.errors import ScopeError

__all__ = ["MAX_SCOPE_ID_CHARS", "Principal", "case_collision", "check_scope_id"]

MAX_SCOPE_ID_CHARS = 64
"""The longest user or workspace id (it becomes one directory name)."""


_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def check_scope_id(value: str, *, what: str = "user id") -> str:
    """`value` if it is a safe single path component, else a `ScopeError` saying what to use.

    Safe: 1–64 ASCII letters, digits, `.`, `_` and `-`, not starting with `.` or `-` (no `..`,
    no hidden directories, nothing a shell would read as a flag), and not `null` in any case
    (YAML reads `null`/`Null`/`NULL` from a config or `$KEEL_*` as "no id": the default user).
    ASCII only, so no two ids look alike or normalise to one name on a file system that folds
    Unicode; ids differing only in case are refused where they would meet (`case_collision`).
    """
    if (
        not value
        or len(value) > MAX_SCOPE_ID_CHARS
        or value[0] in ".-"
        or not all(c in _ID_CHARS for c in value)
    ):
        raise ScopeError(
            f"{what} {value!r} is not a safe directory name; use 1 to {MAX_SCOPE_ID_CHARS} letters, digits, "
            "'.', '_' or '-' (ASCII), not starting with '.' or '-'"
        )
    if value.lower() == "null":
        raise ScopeError(
            f"{what} {value!r} is not allowed: YAML reads it as no id (the default user); pick another id, "
            "or leave it unset for the default user"
        )
    return value


def case_collision(home: Path, principal: Principal) -> None:
    """Refuse a principal whose user or workspace directory differs only in case from an existing one.

    On a case-insensitive file system (macOS, Windows) `Ada` and `ada` would share one
    directory — one user reading the other's memory — while the session store keeps them
    apart; so the second spelling is refused everywhere. Blocking (lists two directories).

    Raises:
        ScopeError: naming the existing spelling to use instead.
    """
    for what, value, parent in (
        ("user id", principal.user_id, home / "users"),
        ("workspace", principal.workspace, home / "workspaces"),
    ):
        if value is None:
            continue
        try:
            names = [p.name for p in parent.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            if name != value and name.lower() == value.lower():
                raise ScopeError(
                    f"{what} {value!r} differs only in case from the existing {name!r} in {str(parent)!r}; "
                    f"use {name!r} (ids differing only in case would share files on case-insensitive disks)"
                )


@dataclass(frozen=True, slots=True)
class Principal:
    """A user and a workspace, each optional (None: today's single-user layout).

    Raises:
        ScopeError: an id is not a safe directory name (see `check_scope_id`).
    """

    user_id: str | None = None
    workspace: str | None = None

    def __post_init__(self) -> None:
        if self.user_id is not None:
            check_scope_id(self.user_id, what="user id")
        if self.workspace is not None:
            check_scope_id(self.workspace, what="workspace")

    @property
    def is_default(self) -> bool:
        """True for the principal of a home without scopes."""
        return self.user_id is None and self.workspace is None

    @property
    def session_user(self) -> str:
        """The user id sessions are recorded under (`""` for the default user)."""
        return self.user_id or ""

    def user_dir(self, home: Path) -> Path:
        """Everything of the user's own: `<home>/users/<user>` (the home itself by default)."""
        return home if self.user_id is None else home / "users" / self.user_id

    def workspace_dir(self, home: Path) -> Path:
        """The workspace's files: `<home>/workspaces/<ws>`, else the user's own directory."""
        return self.user_dir(home) if self.workspace is None else home / "workspaces" / self.workspace

    def user_memories_dir(self, home: Path) -> Path:
        """Where USER.md lives."""
        return self.user_dir(home) / "memories"

    def workspace_memories_dir(self, home: Path) -> Path:
        """Where MEMORY.md (and its ARCHIVE.jsonl) lives."""
        return self.workspace_dir(home) / "memories"

    def skills_dir(self, home: Path) -> Path:
        """The workspace's skill library."""
        return self.workspace_dir(home) / "skills"

    def traces_dir(self, base: Path) -> Path:
        """The user's traces under the traces directory `base`: `<base>/users/<user>`."""
        return base if self.user_id is None else base / "users" / self.user_id

    def describe(self) -> str:
        """`user 'ada', workspace 'web'` / `the default user` — for messages."""
        parts = []
        if self.user_id is not None:
            parts.append(f"user {self.user_id!r}")
        if self.workspace is not None:
            parts.append(f"workspace {self.workspace!r}")
        return ", ".join(parts) if parts else "the default user"
