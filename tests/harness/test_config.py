"""Config loading: the example file, environment overrides, and errors that name the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from harness.config import KeelConfig, load_config
from harness.config._loader import RETIRED_KEYS
from harness.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.yaml"


def _field_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    paths: set[str] = set()
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        paths.add(path)
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            paths |= _field_paths(ann, path + ".")
    return paths


def _yaml_paths(data: object, prefix: str = "") -> set[str]:
    paths: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            path = f"{prefix}{key}"
            paths.add(path)
            if prefix == "" and key == "prices":
                continue  # a free-form table keyed by model name
            paths |= _yaml_paths(value, path + ".")
    return paths


def _refusal(path: Path, text: str) -> str:
    """Why `load_config` refuses a file holding `text` (it must refuse it)."""
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    return str(info.value)


def test_example_config_validates_and_equals_the_defaults() -> None:
    cfg = load_config(EXAMPLE, environ={})
    assert cfg == KeelConfig()


def test_example_config_documents_every_key() -> None:
    documented = _yaml_paths(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8")))
    assert _field_paths(KeelConfig) == documented


def test_environment_overrides_nested_keys_with_yaml_scalars() -> None:
    cfg = load_config(
        None,
        environ={
            "KEEL_MEMORY__SNAPSHOT_POLICY": "live",
            "KEEL_COMPRESSION__THRESHOLD": "0.8",
            "KEEL_RECALL__PERSIST": "false",
            "KEEL_HOME": "/tmp/elsewhere",
            "UNRELATED": "x",
        },
    )
    assert cfg.memory.snapshot_policy == "live"
    assert cfg.compression.threshold == 0.8
    assert cfg.recall.persist is False
    assert cfg.home == Path("/tmp/elsewhere")


def test_unknown_key_is_named_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("memory:\n  snapshot_polcy: live\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"memory\.snapshot_polcy: this key is unknown"):
        load_config(path, environ={})


def test_bad_value_names_the_path_the_rule_and_the_value(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("memory:\n  snapshot_policy: fozen\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"memory\.snapshot_policy: .*'frozen'.*\(got 'fozen'\)"):
        load_config(path, environ={})


def test_missing_file_and_non_mapping_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml", environ={})
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(bad, environ={})


def test_duplicate_slot_in_order_is_refused() -> None:
    with pytest.raises(ConfigError, match="slot_order"):
        load_config(None, environ={"KEEL_PROMPT__SLOT_ORDER": "[identity, identity]"})


def test_a_bare_yaml_off_means_the_flush_mode_off(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("compression:\n  flush: off\n", encoding="utf-8")
    assert load_config(path, environ={}).compression.flush == "off"


def _alias_bomb(levels: int) -> str:
    """A "billion laughs" YAML: each level lists the previous one nine times (9**levels strings)."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, levels + 1):
        lines.append(f"l{n}: &l{n} [" + ",".join([f"*l{n - 1}"] * 9) + "]")
    lines.append(f"agent:\n  system_message: *l{levels}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_file_is_refused_with_a_short_message_before_anything_walks_it(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb(9), encoding="utf-8")  # ~500 bytes, 9**10 strings expanded
    assert path.stat().st_size < 600
    with pytest.raises(ConfigError, match="aliases") as info:
        load_config(path, environ={})
    assert len(str(info.value)) < 500


def test_a_small_alias_bomb_under_the_bound_still_gets_a_bounded_error_message(tmp_path: Path) -> None:
    message = _refusal(tmp_path / "small.yaml", _alias_bomb(3))  # 9**4 = 6,561 strings: under the node bound
    assert "agent.system_message" in message
    assert len(message) < 2_000


def test_an_alias_bomb_through_an_environment_override_is_refused() -> None:
    bomb = (
        "{"
        + ", ".join(f"k{n}: &a{n} [" + ",".join([f"*a{n - 1}" if n else "x"] * 9) + "]" for n in range(9))
        + "}"
    )
    with pytest.raises(ConfigError, match="KEEL_PRICES"):
        load_config(None, environ={"KEEL_PRICES": bomb})


def test_deeply_nested_yaml_is_refused_instead_of_raising_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("agent:\n  system_message: " + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="nests deeper than 32 levels"):
        load_config(path, environ={})
    with pytest.raises(ConfigError, match=r"KEEL_AGENT__PLATFORM.*nests deeper"):
        load_config(None, environ={"KEEL_AGENT__PLATFORM": "[" * 50_000})


def test_an_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("agent:\n  system_message: &a [*a]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="refers to a value that contains it"):
        load_config(path, environ={})


def test_a_config_file_over_a_megabyte_is_refused_without_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("# " + "x" * 1_100_000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="larger than 1,048,576 bytes"):
        load_config(path, environ={})


def test_validation_errors_quote_long_values_shortened_and_cap_the_list(tmp_path: Path) -> None:
    huge = "z" * 500_000
    prices = "".join(f"  m{n}: {{input: -1, output: -1}}\n" for n in range(100))
    message = _refusal(tmp_path / "long.yaml", f"memory:\n  snapshot_policy: {huge}\nprices:\n{prices}")
    assert "memory.snapshot_policy" in message
    assert "zzzz" in message
    assert len(message) < 5_000
    assert "more problems" in message


def test_a_postgres_backend_needs_a_postgresql_url_and_errors_never_echo_its_password() -> None:
    with pytest.raises(ConfigError, match=r"sessions: .*backend postgres needs sessions\.url"):
        load_config(None, environ={"KEEL_SESSIONS__BACKEND": "postgres"})
    with pytest.raises(ConfigError) as caught:
        load_config(None, environ={"KEEL_SESSIONS__URL": "mysql://root:hunter2@db/keel"})
    assert "sessions.url" in str(caught.value) and "not a PostgreSQL URL" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    assert "mysql://root:***@db/keel" in str(caught.value)
    with pytest.raises(ConfigError, match=r"sessions\.pg_schema"):
        load_config(None, environ={"KEEL_SESSIONS__PG_SCHEMA": "Bad-Name"})


def test_the_session_store_url_can_come_from_the_environment(tmp_path: Path) -> None:
    cfg = load_config(
        None,
        environ={
            "KEEL_SESSIONS__BACKEND": "postgres",
            "KEEL_SESSIONS__URL": "postgresql://keel:pw@db.internal:5433/keel",
        },
    )
    assert (cfg.sessions.backend, cfg.sessions.url) == (
        "postgres",
        "postgresql://keel:pw@db.internal:5433/keel",
    )
    assert cfg.sessions.location(tmp_path) == "postgresql://keel:***@db.internal:5433/keel (schema keel)"
    assert KeelConfig().sessions.location(tmp_path) == str(tmp_path / "state.db")


def test_the_test_suites_own_variables_are_not_read_as_config() -> None:
    # .ci/run exports KEEL_TEST_REQUIRE_POSTGRES=1; every keel command the e2e tests start sees it.
    environ = {"KEEL_TEST_REQUIRE_POSTGRES": "1", "KEEL_TEST_POSTGRES_URL": "postgresql://x@h/db"}
    assert load_config(None, environ=environ) == load_config(None, environ={})
    with pytest.raises(ConfigError, match="require_postgres"):
        load_config(None, environ={"KEEL_REQUIRE_POSTGRES": "1"})


@pytest.mark.parametrize("raw", ["null", "Null", "NULL", "~"])
@pytest.mark.parametrize("key", ["KEEL_SCOPE__USER", "KEEL_SCOPE__WORKSPACE", "KEEL_MEMORY__USER_ID"])
def test_an_id_override_that_yaml_reads_as_null_is_refused_not_taken_as_the_default_user(
    key: str, raw: str
) -> None:
    with pytest.raises(ConfigError, match="reads as no id"):
        load_config(None, environ={key: raw})


@pytest.mark.parametrize("raw", ["Null", "NULL", "~"])
@pytest.mark.parametrize("key", ["scope:\n  user", "scope:\n  workspace", "memory:\n  user_id"])
def test_an_id_in_a_file_spelled_like_a_name_but_read_as_null_is_refused(
    tmp_path: Path, key: str, raw: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"{key}: {raw}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"is {raw}, which YAML reads as no id") as caught:
        load_config(path, environ={})
    assert "write null (or leave the key out) for the default user" in str(caught.value)


def test_null_written_as_documented_still_means_the_default_user(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("scope:\n  user: null\n  workspace:\n", encoding="utf-8")
    assert load_config(path, environ={}).scope.user is None  # config.example.yaml's spelling
    path.write_text("scope:\n  user: 'Null'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="the id 'Null' is not allowed"):
        load_config(path, environ={})


@pytest.mark.parametrize("value", ["true", "false"])
def test_a_retired_key_is_refused_with_the_keys_that_replaced_it(tmp_path: Path, value: str) -> None:
    message = _refusal(tmp_path / "c.yaml", f"model:\n  local_cache: {value}\n")
    assert "model.local_cache: this key was replaced by model.local_server.ram_states" in message
    assert "false is ram_states: 0" in message
    assert "unknown" not in message


def test_a_retired_key_set_from_the_environment_names_its_replacement_too() -> None:
    with pytest.raises(
        ConfigError, match=r"model\.local_cache: this key was replaced by model\.local_server"
    ):
        load_config(None, environ={"KEEL_MODEL__LOCAL_CACHE": "true"})


def test_retired_keys_are_gone_and_the_keys_they_name_exist() -> None:
    fields = _field_paths(KeelConfig)
    for old, retired in RETIRED_KEYS.items():
        assert old not in fields, f"{old} is a key again; drop it from RETIRED_KEYS"
        assert set(retired.replaced_by) <= fields, f"{old} names keys that do not exist"
