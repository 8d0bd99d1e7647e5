"""The retention eval end to end on a scripted model: each arm's requests (read back from its
trace), what survives where, and the scores."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.compress.host import CompressionSettings
from harness.config._schema import DEFAULT_FLUSH_CHUNK_TOKENS
from harness.experiments.retention.arms import (
    RETENTION_ARMS,
    RetentionArmName,
    RetentionOptions,
    RetentionResult,
    arm_overrides,
    run_retention,
)
from harness.experiments.retention.longrun import LongOptions
from harness.experiments.retention.report import arm_figures, retention_json
from harness.experiments.retention.script import Question, RetentionReplay, ScriptLine
from harness.models.scripted import ReplyLike
from harness.testing import ScriptedModel, call_tool, config, respond, say
from harness.trace import TraceRecord, read_trace
from harness.types import ModelRequest
from prompts import load_text

FACT = "Dana bakes sourdough bread on Sundays"
TICKET = "JIRA-4312"
WINDOW = 4096


def _replay() -> RetentionReplay:
    lines: list[ScriptLine] = []
    for n in range(1, 61):
        if n == 12:
            text = "Dana: I bake sourdough bread every Sunday, it calms me down."
        elif n == 14:
            text = f"Dana: The ticket for the oven repair is {TICKET}, keep it handy."
        else:
            text = f"Dana: Day {n} was about the garden, the weather and a long walk by the river again."
        lines.append(ScriptLine("user", text, (f"D{n}:1",)))
        lines.append(
            ScriptLine("assistant", f"Sam: Nice to hear about day {n}, tell me more soon.", (f"D{n}:2",))
        )
    questions = (
        Question(0, "What does Dana bake?", "sourdough bread", 4, frozenset({"D12:1"})),
        Question(1, "What is the oven repair ticket?", TICKET, 4, frozenset({"D14:1"})),
        Question(2, "What did Dana say about skydiving?", "", 5, frozenset({"D13:1"}), "she loves it"),
        Question(3, "Which day was in the tail?", "day 59", 4, frozenset({"D59:1"})),
    )
    return RetentionReplay("test-replay", tuple(lines), questions, "The user is Dana; your side is Sam.")


def _reply(request: ModelRequest) -> ReplyLike:
    if request.purpose == "flush":
        if request.tool_choice == "memory":
            return call_tool("memory", {"target": "user", "operations": [{"action": "add", "content": FACT}]})
        return say(f"user: {FACT}")
    if request.purpose == "summary":
        return say("Dana and Sam talked about her garden and her walks.")
    last = request.messages[-1].content
    if "Short answer:" not in last:
        return say("Sam: That sounds lovely.")
    seen = request.system + "\n".join(m.content for m in request.messages[:-1])
    if "bake" in last:
        return say("sourdough bread" if "sourdough" in seen else "Not mentioned in the conversation")
    if "ticket" in last:
        return say(TICKET if TICKET in seen else "Not mentioned in the conversation")
    return say("Not mentioned in the conversation")


async def _arms(
    model: ScriptedModel, root: Path, arms: tuple[RetentionArmName, ...], options: RetentionOptions
) -> RetentionResult:
    """`arms` of the retention experiment on `_replay()`, answered by `model`."""
    return await run_retention(_replay(), config(), model=model, root=root, arms=arms, options=options)


@pytest.fixture
async def result(tmp_path: Path) -> RetentionResult:
    model = ScriptedModel([respond(_reply)] * 400)
    # One flush request over the whole transcript (no pieces): the arms differ exactly in the
    # tool list and the prefix they keep, which is what these tests compare.
    return await run_retention(
        _replay(),
        config(compression__flush_chunk_tokens="0"),
        model=model,
        root=tmp_path,
        options=RetentionOptions(window=WINDOW, ceiling_window=8192, questions=0),
    )


def _trace(result: RetentionResult, arm: str) -> list[TraceRecord]:
    path = next(a.run.trace_path for a in result.arms if a.name == arm)
    assert path is not None
    return list(read_trace(path))


def _one(records: list[TraceRecord], purpose: str) -> TraceRecord:
    found = [r for r in records if r.purpose == purpose]
    assert len(found) == 1, [r.purpose for r in records]
    return found[0]


def _tools(record: TraceRecord) -> list[str]:
    return [t.name for t in record.tools]


async def test_every_arm_runs_and_answers_the_same_questions_whose_evidence_was_compressed(
    result: RetentionResult,
) -> None:
    assert [a.name for a in result.arms] == list(RETENTION_ARMS)
    asked = {q.index for q in result.plan.questions}
    assert asked == {0, 1, 2}  # question 3's evidence stays in the kept tail
    for arm in result.arms:
        assert arm.ran
        assert {s.question.index for s in arm.scored} == asked


async def test_each_flush_arm_sends_its_tool_list_and_tool_choice(result: RetentionResult) -> None:
    turn_tools = _tools(_trace(result, "off")[0])
    assert turn_tools == ["memory", "session_search"]  # skills are off in the eval
    assert not [r for r in _trace(result, "off") if r.purpose == "flush"]
    for arm in ("memory_only", "memory_only_no_index"):
        flush = _one(_trace(result, arm), "flush")
        assert _tools(flush) == ["memory"]
        assert flush.settings["tool_choice"] == "none"  # the text_list reply shape
    chunked = [r for r in _trace(result, "memory_only_chunked") if r.purpose == "flush"]
    assert chunked and all(_tools(r) == ["memory"] for r in chunked)
    # the pieces go under the note-taker's system prompt, the classic flush under the session's
    assert {r.system for r in chunked} == {load_text("flush_system")}
    assert _one(_trace(result, "memory_only"), "flush").system != load_text("flush_system")
    cache_safe = _one(_trace(result, "cache_safe"), "flush")
    assert _tools(cache_safe) == turn_tools
    assert cache_safe.settings["tool_choice"] == "none"
    forced = _one(_trace(result, "forced"), "flush")
    assert _tools(forced) == turn_tools
    assert forced.settings["tool_choice"] == "memory"
    for arm in ("ceiling", "floor"):
        assert {r.purpose for r in _trace(result, arm)} == {"turn"}


async def test_the_flush_keeping_the_prefix_reprefills_less_than_the_memory_only_flush(
    result: RetentionResult,
) -> None:
    by = {a.name: arm_figures(a, "ideal") for a in result.arms}
    assert by["cache_safe"].flush_reprefilled is not None
    assert by["memory_only"].flush_reprefilled is not None
    assert by["cache_safe"].flush_reprefilled < by["memory_only"].flush_reprefilled
    assert by["off"].flush_reprefilled is None
    assert by["off"].first_turn_reprefilled is not None


async def test_questions_are_asked_from_the_post_compression_context_without_tools_calls(
    result: RetentionResult,
) -> None:
    records = _trace(result, "memory_only")
    summary_at = next(i for i, r in enumerate(records) if r.purpose == "summary")
    questions = [r for r in records[summary_at:] if "Short answer:" in r.messages[-1].content]
    assert len(questions) == 3
    for q in questions:
        assert q.settings["tool_choice"] == "none"
        assert _tools(q) == ["memory", "session_search"]
        assert FACT in q.system  # the reloaded snapshot holds what the flush saved
        assert not any("Short answer:" in m.content for m in q.messages[:-1])  # no earlier question
        assert not any("sourdough" in m.content for m in q.messages if not m.content.startswith("["))
    floor = list(_trace(result, "floor"))
    assert all(len(r.messages) == 1 for r in floor)  # no history at all


async def test_answers_survive_where_each_arm_keeps_them(result: RetentionResult) -> None:
    def where(arm: str, index: int) -> tuple[str, ...]:
        a = next(a for a in result.arms if a.name == arm)
        s = next(s for s in a.scored if s.question.index == index)
        assert s.retention is not None
        return s.retention.where

    assert where("memory_only", 0) == ("memory",)  # saved by the flush
    assert where("off", 0) == ()  # the summary does not mention it, nothing was saved
    assert where("memory_only", 1) == ("summary",)  # the identifier index kept the ticket verbatim
    assert where("memory_only_no_index", 1) == ()
    assert where("ceiling", 0) == ("tail",)
    assert where("floor", 0) == ()


async def test_scores_and_the_gain_follow_what_survived(result: RetentionResult) -> None:
    by = {a.name: a for a in result.arms}
    assert by["memory_only"].retained() == 1.0
    assert by["off"].retained() == 0.5  # the ticket, through the identifier index
    assert by["floor"].retained() == 0.0
    assert by["ceiling"].retained() == 1.0
    assert by["memory_only"].f1() == 1.0  # both answers right, the adversarial one "not mentioned"
    assert by["floor"].f1() == pytest.approx(1 / 3)
    assert by["memory_only"].f1(5) == 1.0
    assert result.retention_gain() == 0.5
    data = retention_json(result)
    assert data["retention_gain"] == 0.5
    arms = data["arms"]
    assert isinstance(arms, list) and len(arms) == len(RETENTION_ARMS)


async def test_a_ceiling_that_does_not_fit_is_reported_not_run(tmp_path: Path) -> None:
    model = ScriptedModel([respond(_reply)] * 200)
    result = await _arms(
        model, tmp_path, ("ceiling", "off"), RetentionOptions(window=WINDOW, ceiling_window=3000)
    )
    ceiling = next(a for a in result.arms if a.name == "ceiling")
    assert not ceiling.ran
    assert ceiling.run.status is not None and ceiling.run.status.startswith("n/a: does not fit")
    assert [a.name for a in result.arms] == ["off", "ceiling"]  # the replaying arm made the plan first


def test_arm_overrides_switch_only_what_the_arm_is_about() -> None:
    replay = _replay()
    opts = RetentionOptions(window=3000, ceiling_window=9000)
    classic = arm_overrides("memory_only", replay, opts)["compression"]
    assert classic == {
        "enabled": True,
        "flush": "memory_only",
        "identifier_index": True,
        "flush_chunk_tokens": 0,
    }
    no_index = arm_overrides("memory_only_no_index", replay, opts)["compression"]
    assert no_index == {**classic, "identifier_index": False}
    chunked = arm_overrides("memory_only_chunked", replay, opts)["compression"]
    assert chunked == {**classic, "flush_chunk_tokens": opts.flush_chunk_tokens}
    ceiling = arm_overrides("ceiling", replay, opts)
    assert ceiling["compression"] == {"enabled": False}
    assert ceiling["model"] == {"context_window": 9000, "max_output_tokens": 96, "temperature": 0.0}


async def test_an_arm_whose_compression_was_refused_is_flagged_and_left_out_of_the_gain(
    tmp_path: Path,
) -> None:
    def rambling(request: ModelRequest) -> ReplyLike:
        if request.purpose == "summary":  # bigger than the turns it would replace: refused
            return say("They talked. " * 2_000)
        return _reply(request)

    result = await _arms(
        ScriptedModel([respond(rambling)] * 200),
        tmp_path,
        ("off", "memory_only"),
        RetentionOptions(window=WINDOW),
    )
    for arm in result.arms:
        assert arm.run.note is not None and arm.run.note.startswith("not compressed: the summary came out")
        assert not arm.compressed
    assert result.retention_gain() is None
    assert retention_json(result)["arms"][0]["note"] == result.arms[0].run.note  # type: ignore[index,call-overload]


async def test_identical_requests_are_generated_once_per_run_and_costed_as_the_original(
    tmp_path: Path,
) -> None:
    def slow_summary(request: ModelRequest) -> ReplyLike:
        if request.purpose == "summary":
            time.sleep(0.3)  # a generation that takes time, so its cost is visible
        return _reply(request)

    model = ScriptedModel([respond(slow_summary)] * 400)
    result = await _arms(
        model,
        tmp_path,
        ("off", "memory_only", "cache_safe"),
        RetentionOptions(window=WINDOW, ceiling_window=8192, questions=0),
    )
    traced = [r for arm in ("off", "memory_only", "cache_safe") for r in _trace(result, arm)]
    # Every arm's trace holds all its requests; the model saw each distinct one only once.
    sent = {r.model_dump_json(include={"purpose", "tools", "system", "messages", "settings"}) for r in traced}
    assert len(sent) == len(model.requests) < len(traced)
    summaries = [_one(_trace(result, arm), "summary") for arm in ("off", "memory_only", "cache_safe")]
    assert len({s.messages[0].content for s in summaries}) == 1  # the same middle in every arm
    assert [r.purpose for r in model.requests].count("summary") == 1
    costs = {a.name: a.costs.summary for a in result.arms}
    first = costs["off"]
    assert first is not None and not first.shared
    assert first.wall_s is not None and first.wall_s >= 0.3
    for arm in ("memory_only", "cache_safe"):
        later = costs[arm]
        # Reported at what the generation cost, not at what handing out the kept reply took.
        assert later is not None and later.shared and later.wall_s is not None and later.wall_s >= 0.3
        assert (_one(_trace(result, arm), "summary").latency_s or 0) < 0.3


def test_every_default_piece_size_is_keels() -> None:
    assert (
        RetentionOptions().flush_chunk_tokens
        == LongOptions().flush_chunk_tokens
        == CompressionSettings(True, 3000, "memory_only", None, 4096).flush_chunk_tokens
        == DEFAULT_FLUSH_CHUNK_TOKENS
    )
