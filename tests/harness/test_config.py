"""Config loading: the example file, environment overrides, and errors that name the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from harness.config import KeelConfig, load_config
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
