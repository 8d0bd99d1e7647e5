"""`keel config check|path`, and how every command reports a broken config."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main


def test_config_check_accepts_the_example_file(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parents[3] / "config.example.yaml"
    assert main(["--config", str(example), "config", "check"]) == 0
    assert "config OK" in capsys.readouterr().out


def test_config_check_names_the_bad_key_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  context_windw: 4096\nmemory:\n  overflow: explode\n", encoding="utf-8")
    assert main(["--config", str(bad), "config", "check"]) == 2
    err = capsys.readouterr().err
    assert "model.context_windw: this key is unknown" in err
    assert "memory.overflow" in err
    assert "'explode'" in err


def test_config_path_says_which_file_or_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KEEL_CONFIG", raising=False)
    assert main(["config", "path"]) == 0
    assert "no config file" in capsys.readouterr().out
    cfg = tmp_path / "c.yaml"
    cfg.write_text("{}\n", encoding="utf-8")
    assert main(["--config", str(cfg), "config", "path"]) == 0
    assert str(cfg) in capsys.readouterr().out


@pytest.mark.parametrize("command", [["demo", "--turns", "1"], ["chat"], ["run", "synthetic-200"]])
def test_model_commands_refuse_a_broken_config_before_starting_anything(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  provider: gemini\n", encoding="utf-8")
    assert main(["--config", str(bad), *command]) == 2
    err = capsys.readouterr().err
    assert "model.provider" in err
    assert not (home / "state.db").exists()


def test_a_remote_provider_without_a_key_says_which_variable_to_set(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cfg = tmp_path / "a.yaml"
    cfg.write_text("model:\n  provider: anthropic\n  name: claude-sonnet-4-5\n", encoding="utf-8")
    assert main(["--config", str(cfg), "chat"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "commands:" in capsys.readouterr().out
