"""The retention benchmark's report: pooled rows per arm, and the headline as the last line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.experiments.retention.arms import RetentionOptions, run_retention
from harness.experiments.retention.script import Question, RetentionReplay, ScriptLine
from harness.models.scripted import ReplyLike
from harness.testing import ScriptedModel, config, respond, say
from harness.types import ModelRequest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.retention_locomo import _report


def _reply(request: ModelRequest) -> ReplyLike:
    if request.purpose == "flush":
        return say("user: Ana keeps bees on the roof")
    if request.purpose == "summary":
        return say("They talked about their week.")
    return say("bees" if "Short answer:" in request.messages[-1].content else "Ben: ok")


async def test_the_report_pools_each_arm_and_returns_the_gain_over_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        ScriptLine(
            "user" if n % 2 else "assistant",
            f"{'Ana' if n % 2 else 'Ben'}: "
            + (
                "I keep bees on the roof." if n == 21 else f"line {n} about the weather and a long walk home."
            ),
            (f"D{n}",),
        )
        for n in range(1, 121)
    ]
    replay = RetentionReplay(
        "t", tuple(lines), (Question(0, "What does Ana keep?", "bees", 4, frozenset({"D21"})),), ""
    )
    result = await run_retention(
        replay,
        config(),
        model=ScriptedModel([respond(_reply)] * 200),
        root=tmp_path,
        arms=("off", "memory_only", "floor"),
        options=RetentionOptions(window=4096),
    )
    gain = _report([result], ["off", "memory_only", "floor"], "ideal")
    out = capsys.readouterr().out
    assert "memory_only" in out and "floor" in out
    assert gain == 1.0  # the flush saved the answer; off kept nothing of it
