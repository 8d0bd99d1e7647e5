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

from harness.config import KeelConfig
from harness.experiments.retention.arms import (
    RETENTION_ARMS,
    RetentionArmName,
    RetentionOptions,
    run_retention,
)
from harness.experiments.retention.facts import FactConversation, PlantedFact
from harness.experiments.retention.items import facts_replay
from harness.experiments.retention.longrun import LongOptions, run_long_retention
from harness.experiments.retention.report import arm_figures
from harness.experiments.retention.script import Question, RetentionReplay, ScriptLine
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


def _small() -> KeelConfig:
    """No session_search tool, a short protected head and tail, short flushes: a small, fast run."""
    return config(
        session_search__enabled="false",
        compression__protect_first_n="1",
        compression__protect_last_n="2",
        compression__tail_ratio="0.05",
        compression__flush_max_tokens="64",
    )


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


# One test per arm: all seven in one test took 20 minutes on a 2-core machine at load 9;
# one compressing arm took 173 s there. The references (ceiling, floor) take their questions
# from a replaying arm, so each runs after `off` (floor adds seconds, ceiling about a minute).
# memory_only_chunked differs from memory_only only in its piece size; its pieces run on the
# real model in test_cli_e2e (the default config) and in the long replay below.
_PAIR = pytest.mark.timeout(600)
ARM_RUNS = [
    *(
        pytest.param((a,), id=a)
        for a in RETENTION_ARMS
        if a not in ("ceiling", "floor", "memory_only_chunked")
    ),
    pytest.param(("off", "ceiling"), id="ceiling", marks=_PAIR),
    pytest.param(("off", "floor"), id="floor", marks=_PAIR),
]


@pytest.mark.parametrize("arm_names", ARM_RUNS)
async def test_every_arm_runs_on_the_real_model_and_compresses_for_real(
    tiny_model: LocalModel, tmp_path: Path, arm_names: tuple[RetentionArmName, ...]
) -> None:
    async with httpx.AsyncClient(timeout=600) as http:
        model = local_client(http, tiny_model.base_url, tiny_model.model, 600, api_key=tiny_model.api_key)
        result = await run_retention(
            _replay(),
            _small(),
            model=model,
            root=tmp_path / "eval",
            arms=arm_names,
            options=RetentionOptions(
                window=2200, ceiling_window=3072, questions=2, answer_tokens=12, turn_tokens=12
            ),
        )
    assert tuple(a.name for a in result.arms) == arm_names
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
    if "floor" in by:
        assert by["floor"].retained() == 0.0  # nothing to see: no history, no memory
    if "ceiling" in by:
        assert by["ceiling"].retained() == 1.0  # the whole conversation is in context


@pytest.mark.timeout(600)
async def test_two_real_compressions_of_a_short_facts_session(tiny_model: LocalModel, tmp_path: Path) -> None:
    """The long-session replay on the real model: facts said first, filler, two compressions
    per arm through the real flush and summary, every fact scored after each."""
    convs = (
        FactConversation(
            "ana",
            (("user", "Hi, I'm Ana and I use vim."), ("assistant", "Hello Ana.")),
            (PlantedFact("name", (("ana",),)), PlantedFact("editor", (("vim",),))),
        ),
    )
    filler = RetentionReplay(
        "filler",
        tuple(
            line
            for n in range(1, 90)
            for line in (
                ScriptLine("user", f"Ana: Day {n} was quiet, mostly work and a long walk by the river.", ()),
                ScriptLine("assistant", f"Ben: Thanks for telling me about day {n}.", ()),
            )
        ),
        (),
        "",
    )
    async with httpx.AsyncClient(timeout=600) as http:
        model = local_client(http, tiny_model.base_url, tiny_model.model, 600, api_key=tiny_model.api_key)
        state = await run_long_retention(
            [facts_replay("e2e-facts", convs, filler)],
            _small(),
            model=model,
            root=tmp_path / "eval",
            arms=("off", "memory_only"),
            options=LongOptions(window=2200, compressions=2),
        )
    assert [a["arm"] for a in state.arms] == ["off", "memory_only"]
    for arm in state.arms:
        snaps = arm["snapshots"]
        assert isinstance(snaps, list) and len(snaps) == 2
    by_arm = {(o.arm, o.item, o.compression): o.depth for o in state.outcomes}
    for name in ("off", "memory_only"):
        assert by_arm[(name, "ana/editor", 1)] == 1 and by_arm[(name, "ana/editor", 2)] == 2
        assert (name, "ana/name", 1) not in by_arm  # the filler says "Ana" on every line: left out
    purposes = [
        r.purpose for r in read_trace(tmp_path / "eval" / "e2e-facts" / "memory_only" / "trace.jsonl")
    ]
    assert purposes.count("flush") == 2
