"""`keel eval retention` on the real embedded model: one short conversation, every arm.

SmolLM2-135M is fast and weak: the point is not its scores but that every arm runs the real
code paths on a real model — the warm turn, a compression that fires by itself (flush,
summary, reload, lineage), independent questions from what is left — and that the numbers
come out of its own traces. Sizes are kept tiny (no session_search or skills tools, a short
protected tail, a 32-token generation cap) so the whole run stays short on a loaded machine.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from harness.experiments.retention import RETENTION_ARMS, RetentionOptions, run_retention
from harness.experiments.retention_report import arm_figures
from harness.experiments.retention_script import Question, RetentionReplay, ScriptLine
from harness.models.factory import local_client
from harness.models.local import LocalModel, start_local_model
from harness.testing import config
from harness.trace import read_trace

FACTS = [
    "Ana: My sister Lucia moved to Porto last spring.",
    "Ana: I adopted a grey cat called Pixel.",
    "Ana: My bakery opens at 7 am on weekdays.",
    "Ana: I play the cello in a small quartet.",
]


def _replay() -> RetentionReplay:
    lines: list[ScriptLine] = []
    for n in range(1, 21):
        said = FACTS[n - 3] if 3 <= n < 3 + len(FACTS) else f"Ana: Day {n} was quiet, mostly work and a walk."
        lines.append(ScriptLine("user", said, (f"D{n}:1",)))
        lines.append(ScriptLine("assistant", f"Ben: Thanks for telling me about day {n}.", (f"D{n}:2",)))
    questions = (
        Question(0, "What is the name of Ana's cat?", "Pixel", 4, frozenset({"D4:1"})),
        Question(1, "Where did Ana's sister move?", "Porto", 4, frozenset({"D3:1"})),
    )
    return RetentionReplay("e2e", tuple(lines), questions, "The user is Ana; your side is Ben.")


@pytest.fixture
async def tiny_model(models_dir: Path, tmp_path: Path) -> AsyncIterator[LocalModel]:
    # A server of its own with a 32-token cap, so the summary and the flush stay short.
    async with start_local_model(
        model="smollm2-135m",
        n_ctx=3072,
        max_tokens=32,
        models_dir=models_dir,
        log_path=tmp_path / "server.log",
    ) as lm:
        yield lm


# Seven arms, each a real compression on a real model: over the default 300 s when the
# machine is shared (measured on a 2-core machine at load 9); the widened limit is for that.
@pytest.mark.timeout(900)
async def test_every_arm_runs_on_the_real_model_and_compresses_for_real(
    tiny_model: LocalModel, tmp_path: Path
) -> None:
    cfg = config(
        session_search__enabled="false",
        compression__protect_first_n="1",
        compression__protect_last_n="2",
        compression__tail_ratio="0.05",
        compression__flush_max_tokens="64",
    )
    async with httpx.AsyncClient(timeout=600) as http:
        model = local_client(http, tiny_model.base_url, tiny_model.model, 600)
        result = await run_retention(
            _replay(),
            cfg,
            model=model,
            root=tmp_path / "eval",
            options=RetentionOptions(
                window=2200, ceiling_window=3072, questions=2, answer_tokens=12, turn_tokens=12
            ),
        )
    assert [a.name for a in result.arms] == list(RETENTION_ARMS)
    assert {q.index for q in result.plan.questions} == {0, 1}  # both facts were in the compressed middle
    for arm in result.arms:
        assert arm.ran, arm.run.status
        assert len(arm.scored) == 2
        records = list(read_trace(arm.run.trace_path)) if arm.run.trace_path else []
        purposes = [r.purpose for r in records]
        if arm.name in ("ceiling", "floor"):
            assert set(purposes) == {"turn"}
            continue
        # the compression fired by itself in the trigger turn, and the first turn after it ran
        assert purposes.count("summary") == 1, purposes
        assert arm.run.compression is not None and arm.run.compression.skipped is None
        assert arm.run.first_turn_s is not None
        figures = arm_figures(arm, "llamacpp")
        assert (
            figures.tokens_retained is not None and figures.tokens_retained < result.plan.prompt_tokens + 200
        )
        if arm.name == "off":
            assert "flush" not in purposes
        else:
            assert purposes.index("flush") < purposes.index("summary")
            assert figures.flush_reprefilled is not None
    by = {a.name: a for a in result.arms}
    assert by["floor"].retained() == 0.0  # nothing to see: no history, no memory
    assert by["ceiling"].retained() == 1.0  # the whole conversation is in context
