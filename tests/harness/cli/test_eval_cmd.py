"""`keel eval retention`: argument errors that say what to do, and the table it prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from harness.cli import main
from harness.cli.commands.eval import category_table, retention_table
from harness.experiments.retention.arms import RetentionOptions, run_retention
from harness.experiments.retention.script import Question, RetentionReplay, ScriptLine
from harness.testing import ScriptedModel, config, say


def test_an_unknown_source_exits_2_and_names_what_would_do(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KEEL_DATA_DIR", raising=False)
    assert main(["eval", "retention", "no-such-conversation"]) == 2
    err = capsys.readouterr().err
    assert "LoCoMo-format file" in err and "synthetic-200" in err


def test_an_unknown_arm_exits_2_and_lists_the_arms(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "retention", "synthetic-200", "--arms", "off,bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown arm 'bogus'" in err and "cache_safe" in err


async def test_the_table_shows_every_arm_and_the_ceiling_that_did_not_fit(tmp_path: Path) -> None:
    lines = tuple(
        ScriptLine(
            role,
            f"{'Ana' if role == 'user' else 'Ben'}: line {n} about the garden and the long walk home.",
            (f"D{n}",),
        )
        for n in range(1, 121)
        for role in (("user",) if n % 2 else ("assistant",))
    )
    replay = RetentionReplay(
        "t", lines, (Question(0, "What about line 21?", "garden", 4, frozenset({"D21"})),), ""
    )
    model = ScriptedModel([say("garden")] * 200)
    result = await run_retention(
        replay,
        config(),
        model=model,
        root=tmp_path,
        arms=("off", "ceiling", "floor"),
        options=RetentionOptions(window=4096, ceiling_window=3000),
    )
    console = Console(width=250, record=True)
    console.print(retention_table(result, "ideal"))
    text = console.export_text()
    for name in ("off", "ceiling", "floor"):
        assert name in text
    assert "n/a: does not fit" in text
    console.print(category_table(result))
    assert "single-hop (1)" in console.export_text()
