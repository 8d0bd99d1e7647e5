"""The long-session replay on a scripted model: K real compressions, lineage, depths, resume."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harness.experiments.retention.facts import FactConversation, MustNot, PlantedFact, load_facts
from harness.experiments.retention.items import (
    LongReplay,
    fact_groups,
    facts_budget,
    facts_replay,
    group_size,
    questions_replay,
)
from harness.experiments.retention.longrun import LongOptions, LongState, report_lines, run_long_retention
from harness.experiments.retention.outcomes import depth_rows, final_gain
from harness.experiments.retention.script import Question, RetentionReplay, ScriptLine
from harness.models.scripted import ReplyLike
from harness.testing import ScriptedModel, config, respond, say
from harness.tokens import load_tiktoken
from harness.types import ModelRequest

WINDOW = 4096
CONVS = (
    FactConversation(
        "rust",
        (("user", "Hi, I'm Sam and I use vim for everything."), ("assistant", "Hello Sam, noted.")),
        (PlantedFact("name", (("sam",),)), PlantedFact("editor", (("vim",),))),
    ),
    FactConversation(
        "db",
        (("user", "We run PostgreSQL 16 in production."), ("assistant", "Good to know.")),
        (PlantedFact("database", (("postgresql", "16"),)),),
    ),
)


def _filler() -> RetentionReplay:
    lines: list[ScriptLine] = []
    for n in range(1, 200):
        lines.append(ScriptLine("user", f"Dana: Day {n} was about the garden, the weather and a walk.", ()))
        lines.append(ScriptLine("assistant", f"Lee: Nice to hear about day {n}, tell me more.", ()))
    return RetentionReplay("filler", tuple(lines), (), "")


def _reply(request: ModelRequest) -> ReplyLike:
    if request.purpose == "flush":
        seen = "\n".join(m.content for m in request.messages)
        lines = ["user: The user's name is Sam."] if "I'm Sam" in seen else []
        return say("\n".join(lines) or "none")
    return say("Dana talked about her garden and the weather.")


def _replay() -> LongReplay:
    return facts_replay("facts", CONVS, _filler())


async def _run(
    tmp_path: Path, arms: tuple[str, ...], state: LongState | None = None
) -> tuple[LongState, ScriptedModel]:
    model = ScriptedModel([respond(_reply)] * 400)
    result = await run_long_retention(
        [_replay()],
        config(session_search__enabled="false"),
        model=model,
        root=tmp_path,
        arms=arms,  # type: ignore[arg-type]  # literal names checked by the run
        options=LongOptions(window=WINDOW, compressions=3, review_every=10),
        state=state,
    )
    return result, model


async def test_three_compressions_happen_and_each_continues_the_lineage(tmp_path: Path) -> None:
    state, model = await _run(tmp_path, ("off", "memory_only"))
    assert len(state.plans["facts"].compress_after) == 3
    for arm in state.arms:
        snaps = arm["snapshots"]
        assert isinstance(snaps, list)
        rows = [s for s in snaps if isinstance(s, dict)]
        assert [s["compression"] for s in rows] == [1, 2, 3]
        ids = [(s["session_id"], s["parent_session_id"]) for s in rows]
        assert ids[1][1] == ids[0][0] and ids[2][1] == ids[1][0]
    db = sqlite3.connect(tmp_path / "facts" / "memory_only" / "state.db")
    ends = [r[0] for r in db.execute("select end_reason from sessions order by started_at")]
    assert ends[:3] == ["compression"] * 3
    # the summaries are the same requests in both arms: generated once
    assert sum(r.purpose == "summary" for r in model.requests) == 3


async def test_depth_counts_compressions_since_the_fact_was_said(tmp_path: Path) -> None:
    state, _ = await _run(tmp_path, ("off", "memory_only"))
    name = [o for o in state.outcomes if o.item == "rust/name" and o.arm == "memory_only"]
    assert [(o.compression, o.depth) for o in name] == [(1, 1), (2, 2), (3, 3)]
    # the flush saved the name, so it survives in memory; `off` loses it once the summary
    # (which never mentions it) and the identifier index move on
    assert all(o.value == 1.0 and "memory" in o.where for o in name)
    rows = depth_rows(state.outcomes, ["off", "memory_only"])
    best = final_gain(rows)
    assert best is not None and best[0] == "memory_only"


async def test_resume_skips_the_arms_already_in_the_state(tmp_path: Path) -> None:
    first, _ = await _run(tmp_path / "a", ("off",))
    again = LongState.from_json(first.to_json())
    state, model = await _run(tmp_path / "b", ("off", "memory_only"), again)
    assert [a["arm"] for a in state.arms] == ["off", "memory_only"]
    # only memory_only ran: its three flushes and three summaries
    assert [r.purpose for r in model.requests].count("flush") == 3
    assert state.plans["facts"] == first.plans["facts"]


async def test_the_background_arm_reviews_every_n_user_lines_and_never_flushes(tmp_path: Path) -> None:
    state, model = await _run(tmp_path, ("off", "background"))
    notes = [r.messages[-1].content for r in model.requests if r.purpose == "flush"]
    assert notes and all("periodic memory review" in n for n in notes)  # reviews only: no flush note
    # a review runs after every 10th user line, at the same lines, and saves what it reads
    name = [o for o in state.outcomes if o.item == "rust/name" and o.arm == "background"]
    assert [o.value for o in name] == [1.0, 1.0, 1.0]
    assert all("memory" in o.where for o in name)
    off = [o for o in state.outcomes if o.item == "rust/name" and o.arm == "off"]
    assert off[-1].value == 0.0


async def test_locomo_questions_are_scored_by_answer_recall_after_each_compression(tmp_path: Path) -> None:
    base = _filler()
    lines = list(base.lines)
    lines[20] = ScriptLine("user", "Dana: I adopted a cat called Pixel yesterday.", ("D11:1",))
    replay = questions_replay(
        RetentionReplay(
            "qs",
            tuple(lines),
            (
                Question(0, "What is the cat called?", "Pixel", 4, frozenset({"D11:1"})),
                Question(1, "Something adversarial?", "", 5, frozenset({"D11:1"})),
            ),
            "",
        )
    )
    assert [i.id for i in replay.items] == ["q0"] and replay.items[0].said_at == 20
    state = await run_long_retention(
        [replay],
        config(session_search__enabled="false"),
        model=ScriptedModel([respond(_reply)] * 100),
        root=tmp_path,
        arms=("off",),
        options=LongOptions(window=WINDOW, compressions=2),
    )
    scored = [o for o in state.outcomes if o.item == "q0"]
    assert [o.kind for o in scored] == ["question"] * len(scored)
    assert scored and all(o.compression > 0 and o.depth >= 1 for o in scored)
    # the scripted summary never mentions Pixel: once the line is summarized, the answer is gone
    assert scored[-1].value == 0.0


async def test_by_default_every_fact_of_a_session_is_said_before_its_first_compression(
    tmp_path: Path,
) -> None:
    """The tuning facts file, grouped as the eval groups it by default, through the eval's own
    prompt: every fact is scored at depth 1, 2 and 3 (in one session, 20 of its 59 facts
    came after the first compression and never reached depth 3)."""
    facts = load_facts(Path(__file__).parents[4] / "benchmarks" / "local_flush_conversations.yaml")
    tokenizer = await load_tiktoken()
    replays = fact_groups("tuning", facts, _filler(), group=None, count=tokenizer.count, window=WINDOW)
    size = group_size(facts, count=tokenizer.count, budget=facts_budget(WINDOW))
    assert len(replays) == -(-len(facts) // size) > 1
    state = await run_long_retention(
        replays,
        config(),
        model=ScriptedModel([respond(_reply)] * 400),
        root=tmp_path,
        arms=("off",),
        options=LongOptions(window=WINDOW, compressions=3, memory_chars=3000),
    )
    depths: dict[str, set[int]] = {}
    for o in state.outcomes:
        depths.setdefault(f"{o.replay}/{o.item}", set()).add(o.depth)
    assert len(depths) == sum(len(r.items) for r in replays) > 50
    assert all(d == {1, 2, 3} for d in depths.values())


async def test_an_arm_that_saves_a_trapped_entry_reports_it_as_a_wrong_memory(tmp_path: Path) -> None:
    conv = FactConversation(
        "editor",
        (
            ("user", "I'm Sam. Emacs is my least favourite editor, only vim for me."),
            ("assistant", "OK."),
        ),
        (PlantedFact("editor", (("vim",),)),),
        (MustNot("emacs", (("emacs",),), ("least", "never", "not")),),
    )

    def reply(request: ModelRequest) -> ReplyLike:
        if request.purpose == "flush" and "least favourite" in "\n".join(m.content for m in request.messages):
            # the first is a wrong memory the flush's checks cannot see (no negation said)
            return say("user: Sam uses Emacs.\nuser: Emacs is Sam's least favourite editor.")
        return say("Dana talked about her garden and the weather.")

    state = await run_long_retention(
        [facts_replay("facts", (conv,), _filler())],
        config(session_search__enabled="false"),
        model=ScriptedModel([respond(reply)] * 400),
        root=tmp_path,
        arms=("off", "memory_only"),
        options=LongOptions(window=WINDOW, compressions=2),
    )
    assert [(w.arm, w.rule, w.entry) for w in state.wrong] == [
        ("memory_only", "editor/emacs", "Sam uses Emacs.")
    ]
    lines = report_lines(state, ["off", "memory_only"])
    assert "memory_only: wrong_memories 1" in lines and "  [editor/emacs] Sam uses Emacs." in lines
    assert lines[-1].startswith("retention_gain ") and lines[-1].endswith(" wrong_memories 1")
    # the count survives the JSON a run is resumed and reported from
    assert LongState.from_json(state.to_json()).wrong == state.wrong


def test_a_replay_knows_its_chat_lines_with_their_speakers() -> None:
    replay = _replay()
    assert "user: hi, i'm sam and i use vim for everything." in replay.chat
    assert any(line.startswith("dana: day 1 was about the garden") for line in replay.chat)
