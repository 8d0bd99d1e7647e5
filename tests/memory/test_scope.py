"""`memory.scope`: the principal's layout in the home, and the ids it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import Principal, ScopeError, check_scope_id
from memory.curated import memories_dir
from memory.scope import MAX_SCOPE_ID_CHARS, case_collision


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
    [
        *(
            "",
            ".",
            "..",
            ".hidden",
            "-rf",
            "a/b",
            "a\\b",
            "x y",
            "a\x00b",
            "é/",
            "x" * (MAX_SCOPE_ID_CHARS + 1),
        ),
        *("jürgen", "Ａda", "аda", "~"),  # non-ASCII: accented, full-width, Cyrillic look-alike
    ],
)
def test_unsafe_ids_are_refused_with_a_message_that_names_the_rule(bad: str) -> None:
    with pytest.raises(ScopeError, match="not a safe directory name; use 1 to 64 letters"):
        Principal(user_id=bad)
    with pytest.raises(ScopeError, match="workspace"):
        Principal(workspace=bad)
    # a ValueError too, so callers that caught the old memories_dir error still do
    with pytest.raises(ValueError):
        check_scope_id(bad)


@pytest.mark.parametrize("good", ["ada", "Ada-1", "team_a.b", "x" * MAX_SCOPE_ID_CHARS, "nullable"])
def test_plain_ids_are_accepted_as_given(good: str) -> None:
    assert check_scope_id(good) == good
    assert Principal(user_id=good, workspace=good).user_id == good


@pytest.mark.parametrize("null", ["null", "Null", "NULL", "nUlL"])
def test_ids_yaml_reads_as_null_are_refused_rather_than_meaning_the_default_user(null: str) -> None:
    with pytest.raises(ScopeError, match="YAML reads it as no id"):
        Principal(user_id=null)
    with pytest.raises(ScopeError, match="YAML reads it as no id"):
        Principal(workspace=null)


def test_an_id_differing_only_in_case_from_an_existing_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "users" / "ada").mkdir(parents=True)
    (tmp_path / "workspaces" / "Web").mkdir(parents=True)
    case_collision(tmp_path, Principal(user_id="ada", workspace="Web"))  # the same spellings: fine
    case_collision(tmp_path, Principal(user_id="bob"))
    with pytest.raises(ScopeError, match="differs only in case from the existing 'ada'"):
        case_collision(tmp_path, Principal(user_id="Ada"))
    with pytest.raises(ScopeError, match="use 'Web'"):
        case_collision(tmp_path, Principal(workspace="web"))
