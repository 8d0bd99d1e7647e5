"""`memory.scope`: the principal's layout in the home, and the ids it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import MAX_SCOPE_ID_CHARS, Principal, ScopeError, check_scope_id, memories_dir


def test_the_default_principal_uses_todays_single_user_layout(tmp_path: Path) -> None:
    p = Principal()
    assert p.is_default
    assert p.session_user == ""
    assert p.user_memories_dir(tmp_path) == tmp_path / "memories"
    assert p.workspace_memories_dir(tmp_path) == tmp_path / "memories"
    assert p.skills_dir(tmp_path) == tmp_path / "skills"
    assert p.traces_dir(tmp_path / "traces") == tmp_path / "traces"


def test_a_user_without_a_workspace_keeps_both_files_where_memory_user_id_put_them(tmp_path: Path) -> None:
    p = Principal(user_id="ada")
    assert p.session_user == "ada"
    assert p.user_memories_dir(tmp_path) == memories_dir(tmp_path, user_id="ada")
    assert p.workspace_memories_dir(tmp_path) == tmp_path / "users" / "ada" / "memories"
    assert p.skills_dir(tmp_path) == tmp_path / "users" / "ada" / "skills"
    assert p.traces_dir(tmp_path / "t") == tmp_path / "t" / "users" / "ada"


def test_a_workspace_holds_memory_and_skills_while_user_md_stays_the_users(tmp_path: Path) -> None:
    p = Principal(user_id="ada", workspace="web")
    assert p.user_memories_dir(tmp_path) == tmp_path / "users" / "ada" / "memories"
    assert p.workspace_memories_dir(tmp_path) == tmp_path / "workspaces" / "web" / "memories"
    assert p.skills_dir(tmp_path) == tmp_path / "workspaces" / "web" / "skills"
    only_ws = Principal(workspace="web")
    assert only_ws.user_memories_dir(tmp_path) == tmp_path / "memories"
    assert only_ws.session_user == ""


@pytest.mark.parametrize(
    "bad",
    ["", ".", "..", ".hidden", "-rf", "a/b", "a\\b", "x y", "a\x00b", "é/", "x" * (MAX_SCOPE_ID_CHARS + 1)],
)
def test_unsafe_ids_are_refused_with_a_message_that_names_the_rule(bad: str) -> None:
    with pytest.raises(ScopeError, match="not a safe directory name; use 1 to 64 letters"):
        Principal(user_id=bad)
    with pytest.raises(ScopeError, match="workspace"):
        Principal(workspace=bad)
    # a ValueError too, so callers that caught the old memories_dir error still do
    with pytest.raises(ValueError):
        check_scope_id(bad)


@pytest.mark.parametrize("good", ["ada", "Ada-1", "team_a.b", "x" * MAX_SCOPE_ID_CHARS, "jürgen"])
def test_plain_ids_are_accepted_as_given(good: str) -> None:
    assert check_scope_id(good) == good
    assert Principal(user_id=good, workspace=good).user_id == good
