"""`keel tools list`: the listing of `harness.tools`, with the provider's tools the wiring adds."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main


def test_tools_list_names_the_configured_providers_tools_after_keels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEL_MEMORY__PROVIDER", "holographic")
    monkeypatch.delenv("KEEL_CONFIG", raising=False)
    assert main(["--home", str(tmp_path), "tools", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names[0] == "memory" and "fact_store" in names
    assert names.index("fact_store") > names.index("session_search")
    assert "memory provider 'holographic'" in lines[names.index("fact_store")]
