"""`harness.wiring.scoped` and the `scope` config: which files a principal gets, from which keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_config, resolve_principal
from harness.errors import ConfigError
from harness.testing import config
from harness.wiring.scoped import (
    curated_store,
    session_user_ids,
    shared_memory_store,
    shared_skill_library,
    skill_library,
    trace_dir,
)


def test_scope_ids_are_checked_when_the_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "keel.yaml"
    path.write_text("scope:\n  user: ../etc\n  shared_users: [ok, 'a b']\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    message = str(caught.value)
    assert "scope.user" in message and "not a safe directory name" in message
    assert "scope.shared_users" in message


def test_scope_user_and_the_old_memory_user_id_must_agree() -> None:
    assert resolve_principal(config(memory__user_id="ada")).user_id == "ada"
    assert resolve_principal(config(memory__user_id="ada", scope__user="ada")).user_id == "ada"
    with pytest.raises(ConfigError, match=r"memory\.user_id is the old spelling of scope\.user"):
        resolve_principal(config(memory__user_id="ada", scope__user="bob"))
    # an explicit argument wins over both
    assert resolve_principal(config(memory__user_id="ada", scope__user="bob"), user_id="cy").user_id == "cy"
    assert resolve_principal(config(scope__workspace="web"), workspace="api").workspace == "api"


def test_the_principals_stores_sit_where_the_layout_says(tmp_path: Path) -> None:
    cfg = config(scope__user="ada", scope__workspace="web", memory__memory_char_limit="300")
    principal = resolve_principal(cfg)
    store = curated_store(cfg, tmp_path, principal)
    assert store.path("memory") == tmp_path / "workspaces" / "web" / "memories" / "MEMORY.md"
    assert store.path("user") == tmp_path / "users" / "ada" / "memories" / "USER.md"
    assert store.limit("memory") == 300
    assert skill_library(cfg, tmp_path, principal).root == tmp_path / "workspaces" / "web" / "skills"
    assert trace_dir(cfg, tmp_path, principal) == tmp_path / "traces" / "users" / "ada"


def test_shared_scopes_exist_only_when_named_and_never_for_ones_own_workspace(tmp_path: Path) -> None:
    plain = config(scope__user="ada")
    assert shared_memory_store(plain, tmp_path, resolve_principal(plain)) is None
    assert shared_skill_library(plain, tmp_path, resolve_principal(plain)) is None
    assert session_user_ids(plain, resolve_principal(plain)) == ("ada",)
    cfg = config(scope__user="ada", scope__shared_workspace="team", scope__shared_users="[ops, ada]")
    principal = resolve_principal(cfg)
    shared = shared_memory_store(cfg, tmp_path, principal)
    assert (
        shared is not None
        and shared.path("memory") == tmp_path / "workspaces" / "team" / "memories" / "MEMORY.md"
    )
    assert not shared.enabled("user")  # a shared scope never carries anyone's USER.md
    library = shared_skill_library(cfg, tmp_path, principal)
    assert library is not None and library.root == tmp_path / "workspaces" / "team" / "skills"
    assert session_user_ids(cfg, principal) == ("ada", "ops")
    in_team = resolve_principal(cfg, workspace="team")
    assert shared_memory_store(cfg, tmp_path, in_team) is None  # team members write it directly
