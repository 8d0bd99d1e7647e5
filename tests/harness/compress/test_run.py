"""Compression with the flush, over fakes: order, tool lists, failure policy, lineage."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from harness.config import KeelConfig
from harness.errors import ModelConnectionError, ModelResponseError
from harness.events import CompressionFinished, CompressionStarted, Event, FlushCompleted, Warning
from harness.loop.session import Session
from harness.testing import (
    FakeMemory,
    FakeProviders,
    FakeTokenizer,
    RecordingRecorder,
    ScriptedModel,
    call_tool,
    calls,
    config,
    fail,
    make_session,
    respond,
    run_turn,
    say,
    tool_call,
)
from harness.tools import RawTool, ToolOutput
from harness.types import Message, ModelReply, ModelRequest, ToolSpec, Usage

LONG = " ".join(["word"] * 60)  # 60 fake tokens
# What the first question says, so the facts the flush saves were really said (a flushed
# fact the conversation does not support is refused); as many fake tokens as LONG.
SAID = "I drink oolong, my tea shop opens at 9, I use vim, my name is Sam and deploys run on Fridays."
FIRST = f"{SAID} {' '.join(['word'] * (60 - len(SAID.split())))}"


def _other_tool() -> RawTool:
    async def search(_: str) -> ToolOutput:
        raise AssertionError("the flush must never run a non-memory tool")

    return RawTool(ToolSpec("session_search", "Search past sessions."), search)


def _small_window(**extra: str) -> dict[str, str]:
    # context 800 → threshold 600 fake tokens (small windows use at least 0.75): four
    # filled turns (~570) stay under it, the next user message crosses it.
    return {
        "model__context_window": "800",
        "compression__protect_last_n": "2",
        "compression__flush_chunk_tokens": "0",  # one flush request over the whole transcript
        **extra,
    }


@asynccontextmanager
async def _filled(
    *, fact_at: int = 0, providers: FakeProviders | None = None, **settings: str
) -> AsyncIterator[tuple[ScriptedModel, FakeMemory, Session]]:
    """A small-window session (`settings` on top) with a fake memory and a non-memory tool beside
    the memory tool, after four long turns (~570 tokens, just under the threshold): its model,
    its memory and the session."""
    model, memory = ScriptedModel(tokenizer=FakeTokenizer()), FakeMemory()
    cfg = config(**_small_window(**settings))
    async with make_session(
        model, cfg=cfg, memory=memory, providers=providers, extra_tools=[_other_tool()]
    ) as s:
        await _fill(model, s, 4, fact_at=fact_at)
        yield model, memory, s


async def _fill(session_model: ScriptedModel, session: Session, turns: int, *, fact_at: int = 0) -> None:
    """`turns` long question/answer turns; the fact (`FIRST`) is said in turn `fact_at`."""
    for i in range(turns):
        session_model.extend([say(f"answer {i} {LONG}")])
        await run_turn(session, f"question {i} {FIRST if i == fact_at else LONG}")


async def test_memory_only_flush_carries_only_the_memory_tool_and_the_fact_reaches_the_new_prompt() -> None:
    async with _filled(compression__flush_reply="tool_calls") as filled:
        model, memory, s = filled
        prompt_before = s.prompt.text
        model.extend(
            [
                call_tool("memory", {"action": "add", "target": "user", "content": "User drinks oolong"}),
                say("## Goal\nchat about tea"),
                say("final answer"),
            ]
        )
        events = await run_turn(s, f"third {LONG}")
    flush_req, summary_req, turn_req = model.requests[-3:]
    assert flush_req.purpose == "flush"
    assert [t.name for t in flush_req.tools] == ["memory"]
    assert flush_req.messages[-1].content.startswith("[System: this conversation is about to be compressed.")
    assert summary_req.purpose == "summary"
    assert summary_req.tools == ()
    assert turn_req.purpose == "turn"
    assert memory.entries == ["User drinks oolong"]
    assert "User drinks oolong" not in prompt_before
    assert "User drinks oolong" in s.prompt.text
    assert "User drinks oolong" in turn_req.system
    # no flush artifacts: the note and the flush reply are not in the transcript
    assert not any("about to be compressed" in m.content for m in s.transcript)
    assert not any(m.tool_calls and m.tool_calls[0].name == "memory" for m in s.transcript)
    kinds = [type(e).__name__ for e in events]
    assert (
        kinds.index("CompressionStarted") < kinds.index("FlushCompleted") < kinds.index("CompressionFinished")
    )
    flush = next(e for e in events if isinstance(e, FlushCompleted))
    assert [(x.target, x.content, x.saved) for x in flush.entries] == [("user", "User drinks oolong", True)]


async def test_cache_safe_flush_sends_the_unchanged_tool_list_and_runs_only_memory_calls() -> None:
    async with _filled(compression__flush="cache_safe", compression__flush_reply="tool_calls") as filled:
        model, memory, s = filled
        model.extend(
            [
                calls(
                    tool_call("session_search", {"query": "tea"}),
                    tool_call(
                        "memory", {"action": "add", "target": "memory", "content": "Tea shop opens at 9"}
                    ),
                ),
                say("## Goal\ntea"),
                say("final"),
            ]
        )
        events = await run_turn(s, f"third {LONG}")
    flush_req = next(r for r in model.requests if r.purpose == "flush")
    turn_req = model.requests[-1]
    assert flush_req.tools == turn_req.tools
    assert [t.name for t in flush_req.tools] == ["memory", "session_search"]
    assert memory.entries == ["Tea shop opens at 9"]
    flush = next(e for e in events if isinstance(e, FlushCompleted))
    refused = [x for x in flush.entries if not x.saved]
    assert len(refused) == 1 and refused[0].content.startswith("session_search(")
    assert "not available during flush" in refused[0].reason


async def test_flush_off_makes_no_flush_call() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(
        model, cfg=config(**_small_window(compression__flush="off")), memory=FakeMemory()
    ) as s:
        await _fill(model, s, 4)  # ~570 tokens, just under the threshold
        model.extend([say("## Goal\nx"), say("final")])
        await run_turn(s, f"third {LONG}")
    assert [r.purpose for r in model.requests[-2:]] == ["summary", "turn"]
    assert not any(r.purpose == "flush" for r in model.requests)


async def test_a_network_error_in_the_summary_aborts_and_keeps_the_transcript_identical() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(model, cfg=config(**_small_window()), memory=FakeMemory()) as s:
        await _fill(model, s, 4)  # ~570 tokens, just under the threshold
        before_ids = s.session_id
        model.extend([say("Nothing to save."), fail(ModelConnectionError("unreachable"))])
        transcript_before = s.transcript
        events = []
        compress_events = await s.compress()
        events.extend(compress_events)
        assert s.transcript == transcript_before
        assert s.session_id == before_ids
    finished = next(e for e in events if isinstance(e, CompressionFinished))
    assert finished.aborted
    assert any(isinstance(e, Warning) and "no messages were dropped" in e.message for e in events)


async def test_another_summary_failure_inserts_the_fallback_and_warns() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(**_small_window(compression__protect_first_n="0"))
    async with make_session(model, cfg=cfg, memory=FakeMemory()) as s:
        await _fill(model, s, 4)  # ~570 tokens, just under the threshold
        model.extend([say("Nothing to save."), fail(ModelResponseError("garbled"))])
        events = await s.compress()
        summary = next(m for m in s.transcript if m.summary)
    assert "Fallback checkpoint" in summary.content
    assert any(isinstance(e, Warning) and "fallback" in e.message for e in events)
    finished = next(e for e in events if isinstance(e, CompressionFinished))
    assert finished.summary_fallback
    assert not finished.aborted


async def test_compression_continues_in_a_child_session_and_providers_hear_of_it() -> None:
    recorder = RecordingRecorder()
    providers = FakeProviders()
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(
        model, cfg=config(**_small_window()), memory=FakeMemory(), recorder=recorder, providers=providers
    ) as s:
        await _fill(model, s, 4)  # ~570 tokens, just under the threshold
        old = s.session_id
        model.extend([say("Nothing to save."), say("## Goal\nkeep chatting")])
        await s.compress(focus="tea")
        new = s.session_id
    assert new != old
    assert (old, "compression") in recorder.ended
    assert (new, old) in recorder.started
    assert providers.switches == [(new, old)]
    assert providers.pre_compress, "providers were not asked before the summary"
    # the child session holds exactly the compacted transcript, copied in one transaction
    assert recorder.messages[new] == list(s.transcript)
    assert [b for b in recorder.batches if b[0] == new] == [(new, len(s.transcript))]
    assert providers.switch_reasons == ["compression"]
    assert providers.ended and len(providers.ended[0]) == 8
    # the old session keeps all of its messages
    assert len(recorder.messages[old]) == 8
    summary_req = next(r for r in model.requests if r.purpose == "summary")
    assert "provider says: keep the tea preference" in summary_req.messages[0].content
    assert "FOCUS" in summary_req.messages[0].content


async def test_the_latest_user_message_survives_and_the_summary_is_reference_only() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(model, cfg=config(**_small_window()), memory=FakeMemory()) as s:
        await _fill(model, s, 4)  # ~570 tokens, just under the threshold
        model.extend([say("Nothing to save."), say("## Goal\nx")])
        await s.compress()
        msgs = s.transcript
    [summary] = [m for m in msgs if m.summary]
    assert summary.content.startswith("[CONTEXT CHECKPOINT — REFERENCE ONLY]")
    # the first compression keeps the opening exchange as the head
    assert msgs[0].content.startswith("question 0")
    assert any(m.role == "user" and m.content.startswith("question 3") for m in msgs)


async def test_a_system_prompt_over_the_threshold_turns_automatic_compression_off_with_a_warning() -> None:
    # The system prompt alone is over the threshold: no cut can help, so none is tried.
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(
        model__context_window="300", compression__flush="off", agent__system_message=" ".join([LONG] * 4)
    )
    async with make_session(model, cfg=cfg) as s:
        model.extend([say("hi"), say("hi again")])
        events = await run_turn(s, f"one {LONG}")
        events += await run_turn(s, "two")
    assert not [e for e in events if isinstance(e, CompressionStarted)]
    assert [r.purpose for r in model.requests] == ["turn", "turn"]
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert len(warnings) == 1 and "system prompt and tools alone" in warnings[0]
    assert s.compressor.blocked


async def test_two_compressions_that_leave_the_prompt_over_the_threshold_stop_automatic_compression() -> None:
    # Each compression runs (a summary replaces the middle) but the kept tail alone is over
    # the threshold: after the second, automatic compression stops with a warning.
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(
        **_small_window(
            compression__flush="off",
            compression__protect_last_n="1",
            compression__protect_first_n="0",
            compression__tail_ratio="0.05",
        )
    )
    huge = " ".join(["big"] * 650)
    async with make_session(model, cfg=cfg) as s:
        model.extend([say(f"a {LONG}"), say(f"b {LONG}")])
        await run_turn(s, f"first {LONG}")
        await run_turn(s, f"second {LONG}")
        model.extend([say("summary one"), say("c"), say("summary two"), say("d")])
        events = await run_turn(s, huge)
        events += await run_turn(s, huge)
    finished = [e for e in events if isinstance(e, CompressionFinished) and e.new_session_id is not None]
    assert len(finished) == 2 and all(
        e.tokens_after >= s.settings.compression.threshold_tokens for e in finished
    )
    assert any(isinstance(e, Warning) and "two compressions in a row" in e.message for e in events)
    assert s.compressor.blocked


async def test_a_skip_before_a_successful_compression_does_not_count_toward_anti_thrash() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(**_small_window(compression__flush="off", compression__protect_first_n="0"))
    async with make_session(model, cfg=cfg) as s:
        model.extend([say("ok")])
        await run_turn(s, "hi")
        skipped = await s.compress()  # nothing to compress yet: a skip, not a compression
        assert any(isinstance(e, Warning) and "compression skipped" in e.message for e in skipped)
        await _fill(model, s, 4)  # just under the threshold
        model.extend([say("the checkpoint"), say("still here")])
        events = await run_turn(s, f"crossing {LONG}")  # one automatic compression runs
    assert [r.purpose for r in model.requests[-2:]] == ["summary", "turn"]
    assert any(isinstance(e, CompressionFinished) and e.new_session_id for e in events)
    assert s.compressor.compressions == 1 and s.compressor.ineffective == 0
    assert not s.compressor.blocked


async def test_budgets_follow_the_models_token_counts_not_our_tokenizers() -> None:
    # The model reports three times the tokens our tokenizer counts (a different vocabulary):
    # the session learns the ratio and its estimates follow the model.
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(model, cfg=config(model__context_window="100000")) as s:
        ours = s.estimator.counter.count_prompt(
            s.prompt.text, (Message("user", "hello there"),), s.tools.specs()
        )
        model.extend([say("hi", usage=Usage(input=3 * ours, output=1))])
        await run_turn(s, "hello there")
        assert s.estimator.token_scale == 3.0
        extra = Message("user", LONG)
        assert s.estimator.count_message(extra) == 3 * s.estimator.counter.count_message(extra)


async def test_a_middle_smaller_than_a_summary_is_not_compressed_and_nothing_is_flushed() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(**_small_window(compression__protect_first_n="0"))
    async with make_session(model, cfg=cfg, memory=FakeMemory()) as s:
        for i in range(3):
            model.extend([say(f"ok {i}")])
            await run_turn(s, f"hi {i}")
        before = s.transcript
        events = await s.compress()
        assert s.transcript == before
    assert not any(r.purpose in ("flush", "summary") for r in model.requests)
    assert any(isinstance(e, Warning) and "too small" in e.message for e in events)


async def test_a_summary_no_smaller_than_the_turns_it_replaces_is_refused() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(**_small_window(compression__protect_first_n="0"))
    async with make_session(model, cfg=cfg, memory=FakeMemory()) as s:
        await _fill(model, s, 4)
        before = s.transcript
        model.extend([say("Nothing to save."), say("## Goal\n" + " ".join(["padding"] * 2000))])
        events = await s.compress()
        assert s.transcript == before
    assert any(isinstance(e, Warning) and "no smaller" in e.message for e in events)
    finished = next(e for e in events if isinstance(e, CompressionFinished))
    assert finished.new_session_id is None


async def test_the_forced_flush_keeps_the_tool_list_and_names_the_memory_tool_as_the_only_choice() -> None:
    providers = FakeProviders()
    async with _filled(providers=providers, compression__flush="forced") as (model, memory, s):
        depths: list[int] = []

        def flush_reply(request: ModelRequest) -> ModelReply:
            depths.append(providers.flush_depth)
            return ModelReply(
                Message(
                    "assistant",
                    "",
                    tool_calls=(
                        tool_call("memory", {"action": "add", "target": "user", "content": "Uses vim"}),
                    ),
                )
            )

        model.extend([respond(flush_reply), say("## Goal\nedit"), say("final")])
        await run_turn(s, f"third {LONG}")
    flush_req = next(r for r in model.requests if r.purpose == "flush")
    assert flush_req.tool_choice == "memory"
    assert flush_req.tools == model.requests[-1].tools  # the prefix's tool list is unchanged
    assert memory.entries == ["Uses vim"]
    assert depths == [1], "the flush must run inside the providers' flush context"


async def test_a_flush_reply_that_claims_a_save_without_calling_the_tool_is_a_refused_entry() -> None:
    recorder = RecordingRecorder()
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(
        model, cfg=config(**_small_window()), memory=FakeMemory(), recorder=recorder
    ) as s:
        await _fill(model, s, 4)
        model.extend(
            [say("I have saved your timezone (Europe/Lisbon) to memory."), say("## Goal\nx"), say("ok")]
        )
        events = await run_turn(s, f"third {LONG}")
    flush = next(e for e in events if isinstance(e, FlushCompleted))
    assert not any(e.saved for e in flush.entries)
    claimed = flush.entries[-1]
    assert claimed.action == "claimed" and "no valid memory call" in claimed.reason
    assert "Europe/Lisbon" in claimed.content
    assert recorder.flushes[0][2] == flush.entries


async def test_a_plain_nothing_to_save_reply_is_not_a_claimed_save() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(model, cfg=config(**_small_window()), memory=FakeMemory()) as s:
        await _fill(model, s, 4)
        model.extend([say("Nothing to save."), say("## Goal\nx"), say("ok")])
        events = await run_turn(s, f"third {LONG}")
    flush = next(e for e in events if isinstance(e, FlushCompleted))
    assert flush.entries == ()


async def _summary_after(
    model: ScriptedModel, cfg: KeelConfig, first: str, *, tools: Sequence[RawTool] = ()
) -> str:
    """Say `first`, then three long turns, then the turn that compresses: the summary message's text."""
    async with make_session(model, cfg=cfg, extra_tools=tools) as s:
        model.extend([say(f"noted {LONG}")])
        await run_turn(s, f"{first} {LONG}")
        await _fill(model, s, 3)
        model.extend([say("## Goal\nthe ticket"), say("ok")])
        await run_turn(s, f"next {LONG}")
    return next(m for m in s.transcript if m.summary).content


async def test_the_summary_message_carries_the_middles_identifiers_verbatim() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    search = RawTool(ToolSpec("session_search", "Search past sessions."), _no_call)
    cfg = config(**_small_window(compression__flush="off", compression__protect_first_n="0"))
    summary = await _summary_after(
        model, cfg, "ticket JIRA-4312 is about ./scripts/deploy.sh on db-7.internal", tools=[search]
    )
    for ident in ("JIRA-4312", "./scripts/deploy.sh", "db-7.internal"):
        assert ident in summary
    assert "session_search" in summary


async def test_the_identifier_index_can_be_switched_off() -> None:
    model = ScriptedModel(tokenizer=FakeTokenizer())
    cfg = config(
        **_small_window(
            compression__flush="off", compression__identifier_index="false", compression__protect_first_n="0"
        )
    )
    assert "JIRA-4312" not in await _summary_after(model, cfg, "ticket JIRA-4312")


async def test_an_unreachable_summary_model_backs_off_flushes_once_and_then_stops_trying() -> None:
    # Every summary call fails as unreachable: the first attempt flushes; retries wait 1
    # and 2 turns, never flush again, and the third abort turns automatic compression off.
    model = ScriptedModel(tokenizer=FakeTokenizer())

    def reply(request: ModelRequest) -> ModelReply:
        if request.purpose == "summary":
            raise ModelConnectionError("summary endpoint down")
        return ModelReply(
            Message("assistant", f"answer {LONG}" if request.purpose == "turn" else "Nothing to save.")
        )

    cfg = config(**_small_window())
    async with make_session(model, cfg=cfg, memory=FakeMemory()) as s:
        await _fill(model, s, 4)
        model.extend([respond(reply)] * 40)
        events: list[Event] = []
        for i in range(8):
            events += await run_turn(s, f"more {i} {LONG}")
    purposes = [r.purpose for r in model.requests]
    assert purposes.count("flush") == 1
    assert purposes.count("summary") == 3
    aborted = [e for e in events if isinstance(e, CompressionFinished) and e.aborted]
    assert len(aborted) == 3
    assert any(isinstance(e, Warning) and "could not reach the summary model" in e.message for e in events)
    assert s.compressor.blocked
    assert len(s.transcript) == 8 + 2 * 8  # nothing was dropped


async def _no_call(_: str) -> ToolOutput:
    raise AssertionError("not called")


async def test_the_default_flush_asks_for_fact_lines_and_writes_each_through_the_memory_tool() -> None:
    async with _filled() as (model, memory, s):
        model.extend(
            [
                say("user: The user's name is Sam.\nmemory: Deploys run on Fridays.\nthe weather was nice"),
                say("## Goal\nchat"),
                say("final"),
            ]
        )
        events = await run_turn(s, f"third {LONG}")
    flush_req = next(r for r in model.requests if r.purpose == "flush")
    assert flush_req.tool_choice == "none" and [t.name for t in flush_req.tools] == ["memory"]
    assert memory.entries == ["The user's name is Sam.", "Deploys run on Fridays."]
    flush = next(e for e in events if isinstance(e, FlushCompleted))
    assert [(e.content, e.saved) for e in flush.entries if e.saved] == [
        ("The user's name is Sam.", True),
        ("Deploys run on Fridays.", True),
    ]
    assert any(not e.saved and "weather" in e.content for e in flush.entries)


def _flush_reply(request: ModelRequest) -> ModelReply:
    """A flush that finds the user's name wherever its piece says it."""
    piece = " ".join(m.content for m in request.messages[:-1])
    text = "user: The user's name is Sam." if "my name is Sam" in piece else "none"
    return ModelReply(message=Message(role="assistant", content=text), usage=Usage(1, 1))


async def test_a_chunked_flush_sends_the_dropped_turns_in_pieces_and_saves_from_each() -> None:
    # ~125 fake tokens per turn: a budget of 150 holds one turn per piece; the fact is said in
    # turn 2, past the protected head, before the kept tail
    async with _filled(fact_at=2, compression__flush_chunk_tokens="150") as (model, memory, s):
        before = list(s.transcript)
        model.extend([respond(_flush_reply)] * 4 + [say("## Goal\nchat"), say("final")])
        events = await run_turn(s, f"third {LONG}")
    flushes = [r for r in model.requests if r.purpose == "flush"]
    assert len(flushes) == 4
    sent = [list(r.messages[:-1]) for r in flushes]  # the note is last
    assert all(p[0].role == "user" for p in sent[1:])  # the first may start mid-turn
    flat = [m for p in sent for m in p]
    # consecutive pieces of what was there before, from the protected head (never read by a
    # flush before this first compression) through the middle, never the kept tail
    assert flat == before[: len(flat)]
    assert before[-1] not in flat
    note = "[System: this conversation is about to be compressed"
    assert all(r.messages[-1].content.startswith(note) for r in flushes)
    assert memory.entries == ["The user's name is Sam."]
    done = [e for e in events if isinstance(e, FlushCompleted)]
    assert len(done) == 1 and [x.content for x in done[0].entries if x.saved] == ["The user's name is Sam."]


async def test_a_chunked_flush_that_fails_midway_keeps_what_earlier_pieces_saved() -> None:
    memory = FakeMemory()
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(
        model,
        cfg=config(**_small_window(compression__flush_chunk_tokens="150")),
        memory=memory,
    ) as s:
        await _fill(model, s, 4, fact_at=2)  # past the protected head, before the kept tail
        model.extend(
            [
                respond(_flush_reply),  # the protected head, read at the first compression
                respond(_flush_reply),
                respond(_flush_reply),  # the fact's piece
                fail(ModelResponseError("bad gateway")),
                say("## Goal\nchat"),
                say("final"),
            ]
        )
        events = await run_turn(s, f"third {LONG}")
    assert memory.entries == ["The user's name is Sam."]
    warning = next(e for e in events if isinstance(e, Warning) and "flush failed" in e.message)
    assert "earlier pieces saved is kept" in warning.message
    assert any(isinstance(e, CompressionFinished) and not e.aborted for e in events)


async def test_a_flush_entry_the_memory_block_already_holds_is_refused_as_already_in_memory() -> None:
    # the memory snapshot reaches the flush apart from the system prompt: an echo of it is
    # "already in memory", not "repeats the instructions"
    memory = FakeMemory(entries=["Sam deploys on Fridays and uses vim"])
    model = ScriptedModel(tokenizer=FakeTokenizer())
    async with make_session(
        model, cfg=config(**_small_window(compression__flush_reply="tool_calls")), memory=memory
    ) as s:
        await _fill(model, s, 4)
        model.extend(
            [
                call_tool(
                    "memory",
                    {"action": "add", "target": "user", "content": "Sam deploys on Fridays and uses vim"},
                ),
                say("## Goal\nchat about tea"),
                say("final answer"),
            ]
        )
        events = await run_turn(s, f"third {LONG}")
    flush = next(e for e in events if isinstance(e, FlushCompleted))
    assert [(x.saved, x.reason) for x in flush.entries] == [
        (False, "already in memory: an entry there says this (nothing new to save)")
    ]
    assert memory.entries == ["Sam deploys on Fridays and uses vim"]
